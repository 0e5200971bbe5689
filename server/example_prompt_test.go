package server_test

import (
	"context"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// A prompt declares its arguments; prompts/get checks them before the
// handler builds the messages.
func ExampleServer_AddPrompt() {
	srv := server.New()
	err := srv.AddPrompt(server.Prompt{
		Name:        "review",
		Description: "Asks for a code review.",
		Arguments: []server.PromptArgument{
			{Name: "code", Description: "The code to review.", Required: true},
			{Name: "focus", Description: "What to look at."},
		},
	}, func(_ context.Context, req *server.GetPromptRequest) (*server.GetPromptResult, error) {
		focus := req.Arguments["focus"]
		if focus == "" {
			focus = "anything"
		}
		return &server.GetPromptResult{
			Description: "A code review",
			Messages: []*server.PromptMessage{
				{Role: "user", Content: &server.TextContent{Text: "Review this code, looking at " + focus + ":\n" + req.Arguments["code"]}},
				{Role: "assistant", Content: &server.TextContent{Text: "Sure. Let me read it."}},
			},
		}, nil
	})
	if err != nil {
		panic(err)
	}
	c := mcptest.Connect(nil, srv)
	defer func() { _ = c.Close() }() // in a test: mcptest.Connect(t, srv) closes it at the end
	fmt.Println(c.ListPrompts()[0].Arguments[0].Name)
	res := c.GetPrompt("review", map[string]string{"code": "x := 1", "focus": "naming"})
	fmt.Println(res.Messages[0].Content.(*server.TextContent).Text)
	_, rpcErr := c.Call("prompts/get", map[string]any{"name": "review", "arguments": map[string]string{"focus": "naming"}})
	fmt.Println(rpcErr.Code, rpcErr.Message)
	// Output:
	// code
	// Review this code, looking at naming:
	// x := 1
	// -32602 prompt "review": missing required argument "code"
}
