package middleware_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

type namedConn struct {
	transport.Conn
	id string
}

func (c namedConn) SessionID() string { return c.id }

// TestSessionIDThroughInstrument checks that the session id a transport
// gives survives CountConn, and that over Streamable HTTP the server's
// session id (the mcp.session.id of its spans and the session of its logs)
// is the Mcp-Session-Id the client was given.
func TestSessionIDThroughInstrument(t *testing.T) {
	t.Parallel()
	m := metrics.New(middleware.MetricsVocabulary())
	_, end := memory.NewPair()
	defer func() { _ = end.Close() }()
	counted := middleware.CountConn(namedConn{Conn: end, id: "abc"}, m, telemetry.TransportMemory)
	ider, ok := counted.(transport.SessionIDer)
	require.True(t, ok, "CountConn hides transport.SessionIDer")
	assert.Equal(t, "abc", ider.SessionID())
	plain, ok := middleware.CountConn(end, m, telemetry.TransportMemory).(transport.SessionIDer)
	require.True(t, ok)
	assert.Empty(t, plain.SessionID(), "no id when the transport has none")

	srv := server.New()
	require.NoError(t, srv.AddTool(server.Tool{Name: "whoami"}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text(req.Request.Session.ID()), nil
	}))
	h := streamable.New(middleware.CountConns(srv, m, telemetry.TransportStreamableHTTP))
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer func() { _ = h.Close() }()
	post := func(sid, body string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	resp, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, body := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	assert.Contains(t, body, `"text":"`+sid+`"`)
}
