package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
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
	client, srvEnd := memory.NewPair()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), srvEnd) }()
	ctx := context.Background()
	require.NoError(b, client.WriteFrame(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)))
	_, err := client.Read(ctx)
	require.NoError(b, err)
	// The same id every time: each call is answered before the next is sent.
	call := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)

	b.ReportAllocs()
	for b.Loop() {
		if err := client.WriteFrame(ctx, call); err != nil {
			b.Fatal(err)
		}
		m, err := client.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if resp, ok := m.(*transport.Response); !ok || resp.Error != nil {
			b.Fatalf("unexpected answer %#v", m)
		}
	}
	b.StopTimer()
	require.NoError(b, client.Close())
	require.NoError(b, <-served)
}
