package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The tasks fixtures (the io.modelcontextprotocol/tasks extension, SEP-2663,
// and MCP 2025-11-25 tasks). A 2026-07-28 client that declares the
// extension gets a task for every call of a tool with task support; one
// that does not gets synchronous results from the optional ones and
// -32021 from the required ones. A 2025 client asks for a task with
// params.task.

// failingJobDelay is how long failing_job works before it fails.
const failingJobDelay = time.Second

// taskDelay is how long the task of test_tool_with_task works.
const taskDelay = 100 * time.Millisecond

// maxComputeSeconds bounds slow_compute.
const maxComputeSeconds = 3600

type greetArgs struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

type slowComputeArgs struct {
	Seconds float64 `json:"seconds" jsonschema:"how long to work, in seconds (0 to 3600)"`
	Label   string  `json:"label,omitempty" jsonschema:"a label echoed in the result"`
}

type confirmDeleteArgs struct {
	Filename string `json:"filename" jsonschema:"the file to delete"`
}

// taskTool returns a tool with the given task support.
func taskTool(name, description, support string) server.Tool {
	return server.Tool{Name: name, Description: description, Execution: &server.ToolExecution{TaskSupport: support}}
}

// addTaskFixtures registers greet, slow_compute, failing_job,
// protocol_error_job, confirm_delete, multi_input and test_tool_with_task.
func addTaskFixtures(s *server.Server) error {
	withTask := taskTool("test_tool_with_task",
		"Test tool: asks for the user's name by an input_required round, then continues as a task whose result greets the user (task support required)",
		server.TaskSupportRequired)
	withTask.Execution.Deferred = true
	return errors.Join(
		server.AddTypedTool(s, server.Tool{Name: "greet", Description: "Greets someone by name, synchronously (no task support)"},
			func(_ context.Context, _ *server.CallToolRequest, in greetArgs) (string, error) {
				return "Hello, " + in.Name + "!", nil
			}),
		server.AddTypedTool(s, taskTool("slow_compute",
			"Works for the given number of seconds, then reports it; runs as a task for clients that support tasks, and can be cancelled",
			server.TaskSupportOptional), slowCompute),
		server.AddTypedTool(s, taskTool("failing_job",
			"Works for about a second as a task, then fails with a tool error (task support required)",
			server.TaskSupportRequired), failingJob),
		server.AddTypedTool(s, taskTool("protocol_error_job",
			"Fails with a JSON-RPC internal error; as a task, the task fails with that error",
			server.TaskSupportOptional),
			func(context.Context, *server.CallToolRequest, noArgs) (*server.CallToolResult, error) {
				return nil, server.Errorf(protocol.CodeInternal, "protocol_error_job: simulated internal failure")
			}),
		server.AddTypedTool(s, taskTool("confirm_delete",
			"Asks the user to confirm the deletion of a file (one elicitation), then reports what it did; as a task it is input_required until tasks/update answers",
			server.TaskSupportOptional), confirmDelete),
		server.AddTypedTool(s, taskTool("multi_input",
			"Asks the user two questions at once (two elicitations: a name and a confirmation), then reports both answers",
			server.TaskSupportOptional), multiInput),
		server.AddTypedTool(s, withTask,
			func(ctx context.Context, _ *server.CallToolRequest, _ noArgs) (*server.CallToolResult, error) {
				name, err := askString(ctx, "user_name", "What is your name?", "name")
				if err != nil {
					return nil, err
				}
				return server.RunAsTask(ctx, func(ctx context.Context) (*server.CallToolResult, error) {
					if err := pause(ctx, taskDelay); err != nil {
						return nil, err
					}
					return server.Text("Hello, " + name + "! This greeting was prepared by a task."), nil
				})
			}),
	)
}

// pause waits for d or until ctx is done, returning ctx's cause then.
func pause(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func slowCompute(ctx context.Context, _ *server.CallToolRequest, in slowComputeArgs) (*server.CallToolResult, error) {
	if in.Seconds < 0 || in.Seconds > maxComputeSeconds {
		return nil, fmt.Errorf("slow_compute: seconds must be between 0 and %d", maxComputeSeconds)
	}
	if err := pause(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
		return nil, err
	}
	text := "Computed for " + strconv.FormatFloat(in.Seconds, 'f', -1, 64) + "s"
	if in.Label != "" {
		text += " (" + in.Label + ")"
	}
	return server.Text(text), nil
}

func failingJob(ctx context.Context, _ *server.CallToolRequest, _ noArgs) (*server.CallToolResult, error) {
	if err := pause(ctx, failingJobDelay); err != nil {
		return nil, err
	}
	return nil, errors.New("failing_job: the job failed, as it always does")
}

func confirmDelete(ctx context.Context, _ *server.CallToolRequest, in confirmDeleteArgs) (*server.CallToolResult, error) {
	res, err := server.Elicit(server.ContextWithInputKey(ctx, "confirm"), &server.ElicitParams{
		Message:         "Delete " + in.Filename + "?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean","title":"Delete the file"}},"required":["confirm"]}`),
	})
	if err != nil {
		return nil, answerError(ctx, err)
	}
	if res.Action == server.ElicitAccept && res.Content["confirm"] == true {
		return server.Text("Deleted " + in.Filename), nil
	}
	return server.Text("Kept " + in.Filename + " (" + res.Action + ")"), nil
}

// multiInput asks both questions concurrently: in a task both are pending
// at once, under the keys "name" and "confirm".
func multiInput(ctx context.Context, _ *server.CallToolRequest, _ noArgs) (*server.CallToolResult, error) {
	questions := []struct{ key, message, typ string }{
		{"name", "What is your name?", "string"},
		{"confirm", "Do you confirm?", "boolean"},
	}
	answers := make([]*server.ElicitResult, len(questions))
	errs := make([]error, len(questions))
	var wg sync.WaitGroup
	for i, q := range questions {
		wg.Go(func() {
			answers[i], errs[i] = server.Elicit(server.ContextWithInputKey(ctx, q.key), &server.ElicitParams{
				Message:         q.message,
				RequestedSchema: oneFieldSchema(q.key, q.typ),
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, answerError(ctx, err)
	}
	return server.Text(fmt.Sprintf("name=%v (%s), confirm=%v (%s)",
		answers[0].Content["name"], answers[0].Action, answers[1].Content["confirm"], answers[1].Action)), nil
}
