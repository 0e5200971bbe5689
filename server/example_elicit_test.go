package server_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
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

	client, conn := memory.NewPair()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), conn) }()
	ctx := context.Background()
	send := func(frame string) { _ = client.WriteFrame(ctx, []byte(frame)) }

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"demo","version":"1"}}}`)
	_, _ = client.Read(ctx)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"subscribe"}}`)

	// The server's request: the client shows the form and the user fills it in.
	m, _ := client.Read(ctx)
	ask := m.(*transport.Request)
	fmt.Println(ask.Method, string(ask.Params))
	_ = client.Write(ctx, &transport.Response{ID: ask.ID, Result: json.RawMessage(`{"action":"accept","content":{"email":"ada@example.com","frequency":"daily"}}`)})

	m, _ = client.Read(ctx)
	out, _ := transport.AppendMessage(nil, m)
	fmt.Println(string(out))
	_ = client.Close()
	fmt.Println("Serve returned:", <-done)
	// Output:
	// elicitation/create {"message":"Where should we send the newsletter?","requestedSchema":{"type":"object","properties":{"email":{"type":"string","format":"email","title":"Email"},"frequency":{"type":"string","enum":["daily","weekly"],"default":"weekly"}},"required":["email"]}}
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"subscribed ada@example.com (daily)"}]}}
	// Serve returned: <nil>
}
