package gateway_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// A server fronting another: the upstream here is a Vigil server behind
// Streamable HTTP on loopback; a stdio upstream sets Command instead of
// URL ([]string{"npx", "-y", "@modelcontextprotocol/server-everything"}).
// Its tool is served under its own name, and a call is forwarded to it.
func Example() {
	up := server.New()
	_ = up.AddTool(server.Tool{Name: "echo", Description: "Says hello."},
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("hello from upstream"), nil
		})
	endpoint := streamable.New(up)
	ts := httptest.NewServer(endpoint)
	defer func() { ts.Close(); _ = endpoint.Close(); _ = up.Close() }()

	ctx := context.Background()
	srv := server.New()
	g, err := gateway.Mount(ctx, srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "up", URL: ts.URL}}})
	if err != nil {
		panic(err)
	}
	defer func() { _ = g.Close() }()

	client, conn := memory.NewPair()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, conn) }()
	for i, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}`,
	} {
		_ = client.WriteFrame(ctx, []byte(frame))
		m, _ := client.Read(ctx)
		if i == 0 {
			continue // the initialize result
		}
		out, _ := transport.AppendMessage(nil, m)
		fmt.Println(string(out))
	}
	_ = client.Close()
	fmt.Println("Serve returned:", <-done)
	// Output:
	// {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","description":"Says hello.","inputSchema":{"type":"object"}}]}}
	// {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hello from upstream"}]}}
	// Serve returned: <nil>
}
