package main

import (
	"context"
	"errors"

	"github.com/vigil-mcp/vigil/server"
)

// The diagnostic hooks of the 2026-07-28 server-stateless scenario
// (SEP-2575): a tool that needs a client capability, a tool that asks for
// input, a tool that logs, and hooks that change the tool and prompt lists.

// The items the trigger hooks re-register: each registration is a change of
// the list, announced with list_changed (to listen streams in 2026-07-28),
// while the list keeps the same content and order.
const (
	dynamicTool   = "test_dynamic_tool"
	dynamicPrompt = "test_dynamic_prompt"
)

// addDiagnostics registers the diagnostic tools, and the dynamic tool and
// prompt that the triggers replace.
func addDiagnostics(s *server.Server) error {
	return errors.Join(
		addNoArgTool(s, "test_missing_capability",
			"Diagnostic: needs the client's sampling capability; a 2026-07-28 request that does not declare it is refused with -32021",
			func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				text, err := sample(ctx, "sample", "Say hello", 20)
				if err != nil {
					return nil, err
				}
				return server.Text("Sampling result: " + text), nil
			}),
		addNoArgTool(s, "test_streaming_elicitation",
			"Diagnostic: asks the user for a value through elicitation; in 2026-07-28 the question comes back at once as an input_required result",
			func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				value, err := askString(ctx, "user_input", "Please enter a value", "value")
				if err != nil {
					return nil, err
				}
				return server.Text("Received: " + value), nil
			}),
		addNoArgTool(s, "test_logging_tool",
			"Diagnostic: logs one info message to the client; in 2026-07-28 it is sent only if the request names a log level",
			func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				server.ClientLogger(ctx).Info("test_logging_tool ran")
				return server.Text("Logged one info message"), nil
			}),
		addNoArgTool(s, "test_trigger_tool_change",
			"Diagnostic: re-registers "+dynamicTool+", which changes the tool list (notifications/tools/list_changed)",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				if err := addDynamicTool(s); err != nil {
					return nil, err
				}
				return server.Text("The tool list changed"), nil
			}),
		addNoArgTool(s, "test_trigger_prompt_change",
			"Diagnostic: re-registers "+dynamicPrompt+", which changes the prompt list (notifications/prompts/list_changed)",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				if err := addDynamicPrompt(s); err != nil {
					return nil, err
				}
				return server.Text("The prompt list changed"), nil
			}),
		addDynamicTool(s),
		addDynamicPrompt(s),
	)
}

func addDynamicTool(s *server.Server) error {
	return addNoArgTool(s, dynamicTool, "A tool that test_trigger_tool_change re-registers",
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("This is the dynamic tool."), nil
		})
}

func addDynamicPrompt(s *server.Server) error {
	return s.AddPrompt(server.Prompt{Name: dynamicPrompt, Description: "A prompt that test_trigger_prompt_change re-registers"},
		func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
			return &server.GetPromptResult{Messages: []*server.PromptMessage{userText("This is the dynamic prompt.")}}, nil
		})
}
