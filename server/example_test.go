package server_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// A server with one tool, served over an in-memory transport to the
// client of server/mcptest, as a test of it does.
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

	c := mcptest.Pipe(nil, srv) // serves one session of srv over an in-memory pipe (in a test: Pipe(t, srv))
	defer func() { _ = c.Close() }()
	info := c.Initialize("2025-11-25", nil)
	fmt.Println(info.ServerInfo.Name, info.ProtocolVersion, string(info.Capabilities))
	fmt.Println(c.CallTool("greet", map[string]any{"name": "Ada"}).Text())
	// Output:
	// example 2025-11-25 {"tools":{"listChanged":true},"logging":{}}
	// hello, Ada
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
