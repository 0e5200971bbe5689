package loopback

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// On a loopback listener, only loopback names and the allowed hosts pass;
// on any other listener every Host does, and so does a request whose
// listener is not known as TCP.
func TestHostGuard(t *testing.T) {
	t.Parallel()
	h := HostGuard(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), []string{"mcp.example", "other.example:8443"})
	loop := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9090}
	lan := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 9090}
	for _, tc := range []struct {
		local net.Addr // nil: none in the context
		host  string
		want  int
	}{
		{loop, "127.0.0.1:9090", http.StatusOK},
		{loop, "localhost:9090", http.StatusOK},
		{loop, "LOCALHOST", http.StatusOK},
		{loop, "[::1]:9090", http.StatusOK},
		{loop, "mcp.example", http.StatusOK},
		{loop, "MCP.example:9090", http.StatusOK},
		{loop, "other.example:8443", http.StatusOK},
		{loop, "other.example:1", http.StatusForbidden},
		{loop, "evil.example", http.StatusForbidden},
		{loop, "localhost.evil.example", http.StatusForbidden},
		{nil, "evil.example", http.StatusForbidden},
		{lan, "evil.example", http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Host = tc.host
		if tc.local != nil {
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, tc.local))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("Host %q on %v: %d, want %d", tc.host, tc.local, rec.Code, tc.want)
		}
	}
}
