package server_test

import (
	"context"

	"github.com/vigil-mcp/vigil/server"
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
	exampleSession(srv,
		`{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"review","arguments":{"code":"x := 1","focus":"naming"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"review","arguments":{"focus":"naming"}}}`,
	)
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"prompts":[{"name":"review","description":"Asks for a code review.","arguments":[{"name":"code","description":"The code to review.","required":true},{"name":"focus","description":"What to look at."}]}]}}
	// {"jsonrpc":"2.0","id":2,"result":{"description":"A code review","messages":[{"role":"user","content":{"type":"text","text":"Review this code, looking at naming:\nx := 1"}},{"role":"assistant","content":{"type":"text","text":"Sure. Let me read it."}}]}}
	// {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"prompt \"review\": missing required argument \"code\""}}
}
