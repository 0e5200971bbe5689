package vigil

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPFirstRoutesAsTheMux holds newMux's fast path for /mcp to the mux
// behind it: every request goes to the handler the mux itself would pick.
func TestMCPFirstRoutesAsTheMux(t *testing.T) {
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Handler", name) })
	}
	h := newMux(named("mcp"), map[string]http.Handler{"/.well-known/oauth-protected-resource/mcp": named("public")}, named("obs"))
	first, ok := h.(mcpFirst)
	require.True(t, ok, "newMux returns %T", h)
	for _, target := range []string{
		"/mcp", "/mcp/", "/mcpx", "/MCP", "//mcp", "/./mcp", "/a/../mcp", "/%6Dcp", "/mcp?x=1",
		"/", "/metrics", "/.well-known/oauth-protected-resource/mcp",
	} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodConnect} {
			r := httptest.NewRequest(method, "http://127.0.0.1:8080"+target, nil)
			if method == http.MethodConnect {
				r.URL.Path = target // as net/http leaves a CONNECT request's URL
			}
			want := httptest.NewRecorder()
			mh, _ := first.mux.Handler(r)
			mh.ServeHTTP(want, r)
			got := httptest.NewRecorder()
			h.ServeHTTP(got, r)
			assert.Equal(t, want.Code, got.Code, "%s %s", method, target)
			assert.Equal(t, want.Header().Get("X-Handler"), got.Header().Get("X-Handler"), "%s %s", method, target)
			assert.Equal(t, want.Header().Get("Location"), got.Header().Get("Location"), "%s %s", method, target)
		}
	}
}
