package server_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
)

// A tool with task support runs in the background when the client asks
// for a task: the client gets the task at once, polls it, and reads the
// result with tasks/result, which waits for the task to finish. (A
// 2026-07-28 client that declares the tasks extension gets a task without
// asking, and finds the result in tasks/get.)
func ExampleToolExecution() {
	release := make(chan struct{})
	srv := server.New()
	err := srv.AddTool(server.Tool{
		Name:        "report",
		Description: "Builds the monthly report.",
		Execution:   &server.ToolExecution{TaskSupport: server.TaskSupportOptional},
	}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		select {
		case <-release: // the work
			return server.Text("report ready"), nil
		case <-ctx.Done(): // tasks/cancel, or the session ended
			return nil, context.Cause(ctx)
		}
	})
	if err != nil {
		panic(err)
	}

	c := mcptest.Connect(nil, srv)
	defer func() { _ = c.Close() }() // in a test: mcptest.Connect(t, srv) closes it at the end
	var task struct {
		Task struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"task"`
		Status string `json:"status"`
	}
	created, _ := c.Call("tools/call", map[string]any{"name": "report", "task": map[string]any{"ttl": 60000}})
	_ = json.Unmarshal(created, &task)
	id := task.Task.TaskID
	fmt.Println("created:", task.Task.Status)

	polled, _ := c.Call("tasks/get", map[string]any{"taskId": id})
	_ = json.Unmarshal(polled, &task)
	fmt.Println("polled:", task.Status)

	c.Request(100, "tasks/result", map[string]any{"taskId": id}) // answered once the task ends
	close(release)
	note := c.Recv().(*transport.Request) // the status change comes first
	_ = json.Unmarshal(note.Params, &task)
	fmt.Println(note.Method+":", task.Status)
	var result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(c.RecvResult(100), &result)
	fmt.Println("result:", result.Content[0].Text)
	// Output:
	// created: working
	// polled: working
	// notifications/tasks/status: completed
	// result: report ready
}
