package server_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
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

	client, conn := memory.NewPair()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), conn) }()
	ctx := context.Background()
	send := func(frame string) { _ = client.WriteFrame(ctx, []byte(frame)) }
	read := func() transport.Message { m, _ := client.Read(ctx); return m }
	var task struct {
		Task struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"task"`
		Status string `json:"status"`
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}`)
	read()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"report","task":{"ttl":60000}}}`)
	_ = json.Unmarshal(read().(*transport.Response).Result, &task)
	id := task.Task.TaskID
	fmt.Println("created:", task.Task.Status)

	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":%q}}`, id))
	_ = json.Unmarshal(read().(*transport.Response).Result, &task)
	fmt.Println("polled:", task.Status)

	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"taskId":%q}}`, id))
	close(release)
	note := read().(*transport.Request) // the status change comes first
	_ = json.Unmarshal(note.Params, &task)
	fmt.Println(note.Method+":", task.Status)
	var result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(read().(*transport.Response).Result, &result)
	fmt.Println("result:", result.Content[0].Text)

	_ = client.Close()
	fmt.Println("Serve returned:", <-done)
	// Output:
	// created: working
	// polled: working
	// notifications/tasks/status: completed
	// result: report ready
	// Serve returned: <nil>
}
