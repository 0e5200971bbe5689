package server_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
)

// A tool asks the user to fill in a form; the client, which declared the
// elicitation capability, shows it and answers.
func ExampleElicit() {
	srv := server.New(server.WithImplementation("example", "1.0"))
	err := srv.AddTool(server.Tool{Name: "subscribe", Description: "Subscribes the user to the newsletter."},
		func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			res, err := server.Elicit(ctx, &server.ElicitParams{
				Message: "Where should we send the newsletter?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{
					"email":{"type":"string","format":"email","title":"Email"},
					"frequency":{"type":"string","enum":["daily","weekly"],"default":"weekly"}},
					"required":["email"]}`),
			})
			if err != nil {
				return nil, err
			}
			if res.Action != server.ElicitAccept {
				return server.Text("not subscribed: " + res.Action), nil
			}
			return server.Text(fmt.Sprintf("subscribed %v (%v)", res.Content["email"], res.Content["frequency"])), nil
		})
	if err != nil {
		panic(err)
	}

	// The client declares elicitation; when the server asks, it shows the
	// form and the user fills it in.
	c := mcptest.Connect(nil, srv, mcptest.WithCapabilities(map[string]any{"elicitation": map[string]any{}}),
		mcptest.WithRequestHandler(func(_ context.Context, ask *transport.Request) (any, error) {
			fmt.Println(ask.Method, string(ask.Params))
			return map[string]any{"action": "accept", "content": map[string]any{"email": "ada@example.com", "frequency": "daily"}}, nil
		}))
	defer func() { _ = c.Close() }() // in a test: mcptest.Connect(t, srv) closes it at the end
	fmt.Println(c.CallTool("subscribe", nil).Text())
	// Output:
	// elicitation/create {"message":"Where should we send the newsletter?","requestedSchema":{"type":"object","properties":{"email":{"type":"string","format":"email","title":"Email"},"frequency":{"type":"string","enum":["daily","weekly"],"default":"weekly"}},"required":["email"]}}
	// subscribed ada@example.com (daily)
}
