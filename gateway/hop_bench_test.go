package gateway_test

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// BenchmarkHop measures a tools/call forwarded through the gateway, one
// at a time, with its allocations: to a stdio upstream (this test
// binary, its own process: the allocations are the gateway's and the
// in-memory client's) and to an HTTP upstream served in this process
// (its allocations are counted too). make bench-gateway measures the
// CPU under load; this keeps what a call allocates in view.
func BenchmarkHop(b *testing.B) {
	b.Run("stdio", func(b *testing.B) {
		benchHop(b, gateway.Upstream{Name: "e", Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{upstreamEnv + "=1"}}, "pid")
	})
	b.Run("http", func(b *testing.B) {
		up := server.New()
		require.NoError(b, up.AddTool(server.Tool{Name: "hello"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("hello"), nil
		}))
		ep := streamable.New(up, streamable.WithResponseMode(streamable.ResponseJSON))
		ts := httptest.NewServer(ep)
		b.Cleanup(func() {
			ts.Close()
			_, _ = ep.Close(), up.Close()
		})
		benchHop(b, gateway.Upstream{Name: "e", URL: ts.URL}, "hello")
	})
}

// benchHop calls tool of up through a gateway, b.N times.
func benchHop(b *testing.B, up gateway.Upstream, tool string) {
	srv := server.New()
	g, err := gateway.Mount(b.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{up}})
	require.NoError(b, err)
	b.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	c := mcptest.Connect(b, srv)
	require.False(b, c.CallTool(tool, nil).IsError) // the session's upstream session started
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Call("tools/call", map[string]any{"name": tool}); err != nil {
			b.Fatal(err)
		}
	}
}
