package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// FuzzDispatch feeds one arbitrary frame to an initialized session, then a
// ping. Whatever the frame, the server must not panic or hang, must answer
// the ping (the session keeps serving), must never answer with an id the
// frame did not carry, and must end cleanly when the client leaves.
func FuzzDispatch(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"s","method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
		`{"jsonrpc":"2.0","id":9,"result":{}}`,
		`{"jsonrpc":"2.0","id":"fuzz-sentinel","method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
		``, `null`, `[]`, `{}`, `{"jsonrpc":"2.0"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		srv := server.New()
		require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(string(req.Arguments)), nil
		}))
		client, srvEnd := memory.NewPair()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), srvEnd) }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()

		sentinel := transport.StringID("fuzz-sentinel")
		msgs := make(chan transport.Message, 64)
		go func() {
			defer close(msgs)
			for {
				m, err := client.Read(ctx)
				if err != nil {
					return
				}
				msgs <- m
			}
		}()
		init := &transport.Request{
			ID: transport.Int64ID(1), Method: "initialize",
			Params: []byte(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}`),
		}
		require.NoError(t, client.Write(ctx, init))
		require.NoError(t, client.WriteFrame(ctx, frame))
		require.NoError(t, client.Write(ctx, &transport.Request{ID: sentinel, Method: "ping"}))
		answered := false
		for !answered {
			select {
			case m, ok := <-msgs:
				require.True(t, ok, "the session ended before answering the ping")
				if resp, isResp := m.(*transport.Response); isResp && resp.ID == sentinel {
					answered = true
				}
			case <-ctx.Done():
				t.Fatal("no answer to the ping: the session hung")
			}
		}
		require.NoError(t, client.Close())
		select {
		case err := <-served:
			require.NoError(t, err)
		case <-ctx.Done():
			t.Fatal("Serve did not return after the client closed")
		}
		for range msgs {
			continue // drain until the reader exits
		}
	})
}
