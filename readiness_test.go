package vigil_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/server"
)

// TestReadyzHandshake: /readyz is 503 while the readiness handshake is
// refused (a middleware refuses tools/list until a barrier is closed),
// naming why, and 200 once an initialize, notifications/initialized and
// tools/list are answered; the handshake is counted under the memory
// transport, never as a Streamable HTTP session, and its session is gone
// (none active). After Shutdown, /readyz is 503 again (draining).
func TestReadyzHandshake(t *testing.T) {
	open := make(chan struct{})
	refuse := func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "tools/list" {
				select {
				case <-open:
				default:
					return nil, errors.New("not yet")
				}
			}
			return next(ctx, req)
		}
	}
	svc := vigil.New("probed", "2.0.0", vigil.WithPage(nil), vigil.WithServerOptions(server.WithMiddleware(refuse)))
	require.NoError(t, svc.Err())
	require.NoError(t, server.AddTypedTool(svc.Server, server.Tool{Name: "echo"}, func(_ context.Context, _ *server.CallToolRequest, in struct{ S string }) (string, error) {
		return in.S, nil
	}))
	ts := httptest.NewServer(svc.AdminHandler())
	defer ts.Close()
	get := func(path string) (int, string) {
		resp, err := ts.Client().Get(ts.URL + path)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}

	status, body := get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body, "MCP handshake not answered yet: tools/list: error")
	close(open)
	status, body = get("/readyz")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ready\n", body)

	_, metrics := get("/metrics")
	sessions := func(transport string) string {
		m := regexp.MustCompile(`(?m)^mcp_server_sessions_active\{[^}]*transport="` + transport + `"[^}]*\} (\S+)$`).FindStringSubmatch(metrics)
		if m == nil {
			return ""
		}
		return m[1]
	}
	assert.Equal(t, "0", sessions("memory"), "the handshake's session ended")
	assert.Equal(t, "0", sessions("streamable_http"), "no client session counted")
	assert.Regexp(t, `(?m)^mcp_server_session_duration_seconds_count\{[^}]*transport="memory"[^}]*\} 2$`, metrics, "the two handshakes' sessions, under the memory transport")
	assert.Empty(t, svc.Server.Sessions(), "no session left")

	require.NoError(t, svc.Shutdown(context.Background()))
	status, body = get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, "draining\n", body)
}
