package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// clientEndpoint serves a server with one tool, hello, in the answer mode
// given, and returns its URL.
func clientEndpoint(t *testing.T, mode streamable.ResponseMode) string {
	t.Helper()
	srv := server.New()
	require.NoError(t, srv.AddTool(server.Tool{Name: "hello"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	}))
	ep := streamable.New(srv, streamable.WithResponseMode(mode))
	ts := httptest.NewServer(ep)
	t.Cleanup(func() {
		ts.Close()
		_, _ = ep.Close(), srv.Close()
	})
	return ts.URL
}

// exchange writes req on conn and reads its answer.
func exchange(t *testing.T, conn transport.Conn, req *transport.Request) *transport.Response {
	t.Helper()
	require.NoError(t, conn.Write(t.Context(), req))
	m, err := conn.Read(t.Context())
	require.NoError(t, err)
	resp, ok := m.(*transport.Response)
	require.True(t, ok, "an answer, not %T", m)
	require.Equal(t, req.ID, resp.ID)
	return resp
}

// initialize opens conn's session.
func initialize(t *testing.T, conn transport.Conn) {
	t.Helper()
	params := `{"protocolVersion":"` + protocol.Version20251125 + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`
	resp := exchange(t, conn, &transport.Request{ID: transport.Int64ID(1), Method: "initialize", Params: json.RawMessage(params)})
	require.Nil(t, resp.Error)
	require.NoError(t, conn.Write(t.Context(), &transport.Request{Method: "notifications/initialized"}))
}

// TestDialSessionEra: a Conn of Dial opens a session, keeps its id (a
// transport.SessionIDer), gets the answers of a call in JSON and in SSE,
// and deletes the session when closed: the server then refuses the id.
func TestDialSessionEra(t *testing.T) {
	for _, mode := range []streamable.ResponseMode{streamable.ResponseJSON, streamable.ResponseSSE} {
		url := clientEndpoint(t, mode)
		conn := streamable.Dial(streamable.ClientConfig{URL: url})
		initialize(t, conn)
		sid := conn.(transport.SessionIDer).SessionID()
		require.NotEmpty(t, sid)

		call := exchange(t, conn, &transport.Request{ID: transport.Int64ID(2), Method: "tools/call", Params: json.RawMessage(`{"name":"hello"}`)})
		require.Nil(t, call.Error)
		assert.Contains(t, string(call.Result), `"text":"hello"`)

		require.NoError(t, conn.Close())
		_, err := conn.Read(t.Context())
		require.ErrorIs(t, err, transport.ErrClosed)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"ping"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, "Close deleted the session")
	}
}

// TestDialUnknownSession: a 404 on the session (the server forgot it)
// ends the Conn with an error wrapping ErrPeerGone and ErrUnknownSession.
func TestDialUnknownSession(t *testing.T) {
	url := clientEndpoint(t, streamable.ResponseJSON)
	conn := streamable.Dial(streamable.ClientConfig{URL: url})
	t.Cleanup(func() { _ = conn.Close() })
	initialize(t, conn)
	del, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, nil)
	require.NoError(t, err)
	del.Header.Set("Mcp-Session-Id", conn.(transport.SessionIDer).SessionID())
	resp, err := http.DefaultClient.Do(del)
	require.NoError(t, err)
	_ = resp.Body.Close()

	// The Conn may learn of the 404 from its standalone stream's
	// reconnection before the write: then the write itself ends with it.
	err = conn.Write(t.Context(), &transport.Request{ID: transport.Int64ID(2), Method: "ping"})
	if err == nil {
		_, err = conn.Read(t.Context())
	}
	require.ErrorIs(t, err, transport.ErrPeerGone)
	require.ErrorIs(t, err, streamable.ErrUnknownSession)
	_, err = conn.Read(t.Context())
	require.ErrorIs(t, err, streamable.ErrUnknownSession, "the Conn stays ended with the cause")
}

// TestDialNamesTheServerInItsErrors: an error status the connection
// answers a request with itself names the server as ClientConfig.Name
// says ("server" by default), never by its URL.
func TestDialNamesTheServerInItsErrors(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(ts.Close)
	for name, want := range map[string]string{"": "server answered HTTP 503", "upstream": "upstream answered HTTP 503"} {
		conn := streamable.Dial(streamable.ClientConfig{URL: ts.URL, Name: name})
		resp := exchange(t, conn, &transport.Request{ID: transport.Int64ID(1), Method: "ping"})
		require.NotNil(t, resp.Error, name)
		assert.Equal(t, want, resp.Error.Message)
		assert.Equal(t, http.StatusServiceUnavailable, resp.Error.HTTPStatus, "the status, for the caller to act on (a 401: renew)")
		assert.NotContains(t, resp.Error.Message, ts.Listener.Addr().String())
		require.NoError(t, conn.Close())
	}
}

// TestDialErrorCarriesItsHTTPStatus: a request answered HTTP 401 with a
// JSON-RPC error body (as a 2026-07-28 server sends) is answered with that
// error, its HTTPStatus 401, which is never encoded.
func TestDialErrorCarriesItsHTTPStatus(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"token revoked"}}`))
	}))
	t.Cleanup(ts.Close)
	conn := streamable.Dial(streamable.ClientConfig{URL: ts.URL})
	resp := exchange(t, conn, &transport.Request{ID: transport.Int64ID(1), Method: "ping"})
	require.NotNil(t, resp.Error)
	assert.Equal(t, "token revoked", resp.Error.Message)
	assert.Equal(t, http.StatusUnauthorized, resp.Error.HTTPStatus)
	b, err := json.Marshal(resp.Error)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "401")
	require.NoError(t, conn.Close())
}
