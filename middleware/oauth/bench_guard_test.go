package oauth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

// BenchmarkHandler measures what the guard adds to a request with a valid,
// cached JWT: the endpoint alone, the guard whose principal holds every
// scope (the body is not read), and the guard that must read the body to
// find the tool a tools/call names; and the guard on a connection that
// remembers its last token (ConnContext).
func BenchmarkHandler(b *testing.B) {
	key := vtRSAKey(b, "k")
	is := vtNewIssuer(b, key)
	v := vtNewJWTVerifier(b, is, vtNewClock())
	clock := vtNewClock()
	token := vtSign(b, key, is.claims(clock.Now(), func(c jwt.MapClaims) { c["scope"] = "mcp" }))
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
	endpoint := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	})
	newRS := func(toolScopes map[string][]string) *ResourceServer {
		var all []string
		for _, s := range toolScopes {
			all = append(all, s...)
		}
		rs, err := New(Config{
			Resource: vtResource, AuthorizationServers: []string{is.srv.URL}, Verifier: v, Scopes: []string{"mcp"},
			ToolScopes: func(name string) []string { return toolScopes[name] }, AllToolScopes: func() []string { return all },
		})
		require.NoError(b, err)
		return rs
	}
	conn := ConnContext(b.Context(), nil) // one keep-alive connection's
	for _, bc := range []struct {
		name string
		h    http.Handler
		conn bool // the requests come on one connection with a memo (ConnContext)
	}{
		{"endpoint", endpoint, false},
		{"guard", newRS(nil).Handler(endpoint), false},
		{"guard-conn", newRS(nil).Handler(endpoint), true},
		{"guard-reads-body", newRS(map[string][]string{"sleep": {"slow"}}).Handler(endpoint), false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder() // a recorder keeps its first status
				r := httptest.NewRequest(http.MethodPost, vtResource, strings.NewReader(body))
				if bc.conn {
					r = r.WithContext(conn)
				}
				r.Header.Set("Authorization", "Bearer "+token)
				r.Header.Set("Content-Type", "application/json")
				bc.h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
