package server_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// A server with one tool, served over an in-memory transport; the example
// plays the client's part with raw JSON-RPC.
func Example() {
	srv := server.New(server.WithImplementation("example", "1.0"))
	err := srv.AddTool(server.Tool{
		Name:        "greet",
		Description: "Greets someone.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
	}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		var in struct{ Name string }
		if err := json.Unmarshal(req.Arguments, &in); err != nil {
			return nil, err
		}
		return server.Text("hello, " + in.Name), nil
	})
	if err != nil {
		panic(err)
	}

	client, conn := memory.NewPair()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), conn) }()

	ctx := context.Background()
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greet","arguments":{"name":"Ada"}}}`,
	} {
		_ = client.WriteFrame(ctx, []byte(frame))
		m, _ := client.Read(ctx)
		out, _ := transport.AppendMessage(nil, m)
		fmt.Println(string(out))
	}
	_ = client.Close()
	fmt.Println("Serve returned:", <-done)
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"example","version":"1.0"}}}
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hello, Ada"}]}}
	// Serve returned: <nil>
}

// Middleware reads why a request stopped with CancelReasonOf; the String
// form is the label telemetry uses.
func ExampleCancelReasonOf() {
	ctx, cancel := context.WithCancelCause(context.Background())
	fmt.Println(server.CancelReasonOf(ctx))
	cancel(fmt.Errorf("%w: user pressed stop", server.ErrClientCancel))
	fmt.Println(server.CancelReasonOf(ctx))
	// Output:
	// none
	// client_cancel
}
