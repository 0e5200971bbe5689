package streamable_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// TestSmallAnswerSentAtOnce: over HTTP/1.1 a small JSON answer reaches
// its caller as soon as it is written, with its Content-Length (not
// chunked), while its handler's goroutine still has work to do after it:
// here a hook of the sealed request that waits for the caller to have
// read the answer, which would wait for ever were the answer sent only
// once the handler returned.
func TestSmallAnswerSentAtOnce(t *testing.T) {
	testkit.Watchdog(t)
	read := make(chan struct{})
	srv := server.New()
	require.NoError(t, srv.AddTool(server.Tool{Name: "hold"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		serverhook.Of[server.Outcome](ctx).OnDone(func(server.Outcome) { <-read })
		return server.Text("held"), nil
	}))
	h := streamable.New(srv)
	ts := httptest.NewServer(h)
	t.Cleanup(func() { ts.Close(); _ = h.Close(); _ = srv.Close() })

	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	br := bufio.NewReader(conn)
	exchange := func(sid, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		require.NoError(t, req.Write(conn))
		resp, err := http.ReadResponse(br, req)
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(got)
	}
	resp, _ := exchange("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+protocol.Version20250618+`","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sid := resp.Header.Get("Mcp-Session-Id")
	resp, _ = exchange(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)

	resp, body := exchange(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold","arguments":{}}}`)
	close(read)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, resp.TransferEncoding, "not chunked")
	assert.Equal(t, int64(len(body)), resp.ContentLength)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"held"}]}}`, body)

	resp, body = exchange(sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the connection serves the next request")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":3,"result":{}}`, body)
}
