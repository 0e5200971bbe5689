package server_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// namedConn is a Conn whose transport names the session.
type namedConn struct {
	transport.Conn
	id string
}

func (c namedConn) SessionID() string { return c.id }

// TestSessionIDFromTransport checks that a session takes the id its
// transport gives it, and makes its own when the transport gives none.
func TestSessionIDFromTransport(t *testing.T) {
	testkit.Watchdog(t)
	for _, tt := range []struct{ name, given string }{
		{"named", "client-visible-id"},
		{"unnamed", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := server.New()
			require.NoError(t, srv.AddTool(server.Tool{Name: "whoami"}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text(req.Request.Session.ID()), nil
			}))
			client, end := memory.NewPair()
			served := make(chan error, 1)
			go func() { served <- srv.Serve(context.Background(), namedConn{Conn: end, id: tt.given}) }()
			ctx := context.Background()
			require.NoError(t, client.WriteFrame(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)))
			_, err := client.Read(ctx)
			require.NoError(t, err)
			require.NoError(t, client.WriteFrame(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)))
			m, err := client.Read(ctx)
			require.NoError(t, err)
			resp, ok := m.(*transport.Response)
			require.True(t, ok)
			got := regexp.MustCompile(`"text":"([^"]*)"`).FindSubmatch(resp.Result)
			require.NotNil(t, got, "result %s", resp.Result)
			if tt.given != "" {
				assert.Equal(t, tt.given, string(got[1]))
			} else {
				assert.Regexp(t, `^[0-9a-f]{32}$`, string(got[1]))
			}
			require.NoError(t, client.Close())
			require.NoError(t, <-served)
		})
	}
}
