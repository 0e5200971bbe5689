package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// BenchmarkDispatch measures one tools/call round trip of the echo tool over
// the memory transport, no middleware: the client writes a pre-encoded frame
// and decodes the answer, the server decodes, dispatches on a fresh
// goroutine, encodes and writes. Figures include the client's decode.
func BenchmarkDispatch(b *testing.B) {
	srv := server.New()
	require.NoError(b, srv.AddTool(server.Tool{Name: "echo"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	}))
	benchToolCall(b, srv)
}
