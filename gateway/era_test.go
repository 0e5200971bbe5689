package gateway_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
)

// only2026 fronts the upstream at url as one that speaks only 2026-07-28
// would: initialize is an unknown method (404, -32601).
func only2026(t *testing.T, url string) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found"}}`))
			return
		}
		proxy, err := http.NewRequestWithContext(r.Context(), r.Method, url, bytes.NewReader(body))
		if err != nil {
			return
		}
		proxy.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(proxy)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer func() { _ = resp.Body.Close() }()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestStatelessUpstreamThroughTheGateway: an HTTP upstream that speaks
// only 2026-07-28 is discovered and served: its tools, prompts and
// resources, and its request for sampling (an input_required round: the
// upstream's tool runs again with the answer) reaches the client whose
// call caused it, through the same path as a session-era upstream's.
func TestStatelessUpstreamThroughTheGateway(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "ask"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		res, err := server.CreateMessage(ctx, &server.CreateMessageParams{
			Messages:  []server.SamplingMessage{{Role: server.RoleUser, Content: []server.Content{&server.TextContent{Text: "q"}}}},
			MaxTokens: 10,
		})
		if err != nil {
			return nil, err
		}
		return server.Text("sampled by " + res.Model), nil
	}))
	srv := frontServer(t, gateway.Upstream{Name: "a", URL: only2026(t, u.url)})
	c := mcptest.Connect(t, srv, mcptest.WithCapabilities(map[string]any{"sampling": map[string]any{}}),
		mcptest.WithRequestHandler(func(_ context.Context, req *transport.Request) (any, error) {
			if req.Method != "sampling/createMessage" {
				return nil, errors.New("unexpected " + req.Method)
			}
			return map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": "a"}, "model": "model-one"}, nil
		}))
	assert.Contains(t, toolNames(c), "hello")
	assert.Equal(t, "hello from a", c.CallTool("hello", nil).Text())
	assert.Equal(t, "hello you", c.GetPrompt("greet", map[string]string{"who": "you"}).Messages[0].Content.(*server.TextContent).Text)
	assert.Equal(t, "read file:///a/readme", c.ReadResource("file:///a/readme")[0].Text)
	assert.Equal(t, "sampled by model-one", c.CallTool("ask", nil).Text())
}
