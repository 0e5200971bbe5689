package policy_test

import (
	"context"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/middleware/policy"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// A server whose refund tool may refund under 100 only, to callers with
// the refunds scope: the policies, read from YAML (or written as a
// Config), decide each call after its arguments are valid and before the
// tool runs; tools/list hides a tool from a caller its policy denies
// whatever the arguments (not refund, whose policy reads them). Its
// schema is open: a member that a handler decoding into a struct would
// take for amount ("Amount") is refused before the policy runs.
func ExampleSet_ToolPolicy() {
	var cfg policy.Config
	if err := yaml.Unmarshal([]byte(`
tools:
  refund: 'arguments.amount < 100 && "refunds" in principal.scopes'
  audit: 'principal.subject == "auditor"'
`), &cfg); err != nil {
		panic(err)
	}
	set, err := policy.New(cfg)
	if err != nil {
		panic(err)
	}
	srv := server.New(
		server.WithToolPolicy(set.ToolPolicy),
		server.WithToolAccess(func(req *server.Request, t *server.Tool) bool {
			return auth.ToolAccess(req, t) && set.ToolAccess(req, t)
		}),
	)
	ok := func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("done"), nil
	}
	_ = srv.AddTool(server.Tool{Name: "refund", InputSchema: []byte(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`)}, ok)
	_ = srv.AddTool(server.Tool{Name: "audit"}, ok)

	// The principal the OAuth guard would put in each request's context.
	alice := &auth.Principal{Subject: "alice", Scopes: []string{"refunds"}}
	client, conn := memory.NewPair()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(auth.ContextWithPrincipal(context.Background(), alice), conn) }()
	ctx := context.Background()
	for i, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"refund","arguments":{"amount":20}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"refund","arguments":{"amount":500}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"refund","arguments":{"amount":20,"Amount":5000}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"audit"}}`,
	} {
		_ = client.WriteFrame(ctx, []byte(frame))
		m, _ := client.Read(ctx)
		if i > 0 {
			out, _ := transport.AppendMessage(nil, m)
			fmt.Println(string(out))
		}
	}
	_ = client.Close()
	fmt.Println("Serve returned:", <-done)
	// Output:
	// {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"refund","inputSchema":{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}}]}}
	// {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"done"}]}}
	// {"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"denied by policy \"tools.refund\"","data":{"authorization":{"reason":"insufficient_authorization"},"policy":"tools.refund"}}}
	// {"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"invalid arguments for tool \"refund\": member \"Amount\" is the input schema's property \"amount\" under case folding; refused before policy \"tools.refund\""}}
	// {"jsonrpc":"2.0","id":6,"error":{"code":-32600,"message":"denied by policy \"tools.audit\"","data":{"authorization":{"reason":"insufficient_authorization"},"policy":"tools.audit"}}}
	// Serve returned: <nil>
}
