package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// restartable is a Vigil server behind Streamable HTTP whose endpoint can
// be replaced by a new one, as an upstream that restarted: it knows none
// of the sessions of the old one and answers them 404.
type restartable struct {
	url     string
	handler atomic.Pointer[streamable.Endpoint]
	srv     *server.Server
	calls   atomic.Int64 // the tools/call POSTs received
	forget  atomic.Bool  // answer every request of a session 404
	mu      sync.Mutex
	ended   []*streamable.Endpoint
}

// startRestartable serves "peek" (read-only), "set" (idempotent), "put"
// (neither) and the prompt "greet"; each tool answers its name. It has
// no GET stream.
func startRestartable(t *testing.T) *restartable {
	t.Helper()
	u := &restartable{srv: server.New()}
	yes := true
	for _, tool := range []server.Tool{
		{Name: "peek", Annotations: &server.ToolAnnotations{ReadOnlyHint: &yes}},
		{Name: "set", Annotations: &server.ToolAnnotations{IdempotentHint: &yes}},
		{Name: "put"},
	} {
		require.NoError(t, u.srv.AddTool(tool, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(tool.Name), nil
		}))
	}
	require.NoError(t, u.srv.AddPrompt(server.Prompt{Name: "greet"}, func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
		return &server.GetPromptResult{Messages: []*server.PromptMessage{{Role: "user", Content: &server.TextContent{Text: "hi"}}}}, nil
	}))
	u.handler.Store(streamable.New(u.srv))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			// No GET stream, as the spec allows: a session's GET sent after a
			// restart would find the session unknown before its next call
			// does, and the call would go on a new session at once.
			http.Error(w, "no GET stream", http.StatusMethodNotAllowed)
			return
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"method":"tools/call"`)) {
				u.calls.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if u.forget.Load() && r.Header.Get("Mcp-Session-Id") != "" {
			http.NotFound(w, r)
			return
		}
		u.handler.Load().ServeHTTP(w, r)
	}))
	u.url = ts.URL
	t.Cleanup(func() {
		ts.Close()
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, h := range append(u.ended, u.handler.Load()) {
			_ = h.Close()
		}
		_ = u.srv.Close()
	})
	return u
}

// restart replaces the endpoint: the sessions of the old one are unknown.
func (u *restartable) restart() {
	old := u.handler.Swap(streamable.New(u.srv))
	u.mu.Lock()
	u.ended = append(u.ended, old)
	u.mu.Unlock()
}

// TestExpiredSessionRetried: after the upstream forgot the session, a call
// of a read-only or idempotent tool, and a prompts/get, are sent again on
// a new session, once, and succeed; a call of another tool is answered
// with an error that says it was not retried, and the next call works.
func TestExpiredSessionRetried(t *testing.T) {
	testkit.Watchdog(t)
	u := startRestartable(t)
	reg := prometheus.NewRegistry()
	srv, _ := mountWith(t, gateway.Config{Upstreams: []gateway.Upstream{{Name: "r", URL: u.url}}, Registerer: reg})
	c := connect(t, srv)
	require.Equal(t, "peek", c.CallTool("peek", nil).Text(), "the session's first call opens its upstream session")
	for _, tool := range []string{"peek", "set"} {
		u.restart()
		before := u.calls.Load()
		assert.Equal(t, tool, c.CallTool(tool, nil).Text())
		assert.Equal(t, int64(2), u.calls.Load()-before, "%s sent twice: on the old session, then on a new one", tool)
	}
	u.restart()
	assert.Equal(t, "hi", c.GetPrompt("greet", nil).Messages[0].Content.(*server.TextContent).Text, "prompts/get retried")

	u.restart()
	before := u.calls.Load()
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "put"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeInternal), rpcErr.Code)
	assert.Equal(t, "upstream r: its session expired (it answered 404) and the call was not retried: "+
		"it may not be safe to send twice (the tool is not marked read-only or idempotent)", rpcErr.Message)
	assert.Equal(t, int64(1), u.calls.Load()-before, "put was sent once")
	assert.Equal(t, "put", c.CallTool("put", nil).Text(), "the next call opens a new session")
	got := gathered(t, reg)
	assert.InDelta(t, 3, got["mcp_gateway_upstream_expired_total{retried=true,upstream=r}"], 0, "peek, set and the prompt retried")
	assert.InDelta(t, 1, got["mcp_gateway_upstream_expired_total{retried=false,upstream=r}"], 0, "put not retried")
}

// TestExpiredSessionRetriedOnce: an upstream that forgets every session
// at once gets a safe call twice at most (the first try and one retry),
// then the caller gets an error.
func TestExpiredSessionRetriedOnce(t *testing.T) {
	testkit.Watchdog(t)
	u := startRestartable(t)
	c := front(t, gateway.Upstream{Name: "r", URL: u.url})
	u.forget.Store(true)
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "peek"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeInternal), rpcErr.Code)
	assert.LessOrEqual(t, u.calls.Load(), int64(2), "never retried twice")
}
