package oauth

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/connstate"
	"github.com/vigil-mcp/vigil/server"
)

// BenchmarkHandler measures what the guard adds to a request with a valid,
// cached JWT: the endpoint alone, the guard whose principal holds every
// scope (the body is not read), and the guard that must read the body to
// find the tool a tools/call names; and the guard on a connection that
// remembers its last token (streamable.ConnContext).
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
		srv := server.New()
		for name, s := range toolScopes {
			require.NoError(b, srv.AddTool(server.Tool{Name: name, Scopes: s}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text("ok"), nil
			}))
		}
		rs, err := New(Config{
			Resource: vtResource, AuthorizationServers: []string{is.srv.URL}, Verifier: v, Scopes: []string{"mcp"},
			Tools: srv,
		})
		require.NoError(b, err)
		return rs
	}
	conn := connstate.With(b.Context(), nil) // one keep-alive connection's
	for _, bc := range []struct {
		name string
		h    http.Handler
		conn bool // the requests come on one connection with a memo (streamable.ConnContext)
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

// BenchmarkHandlerDPoP measures the guard with DPoP accepted: a Bearer
// request (the path DPoP must not slow: compare BenchmarkHandler/guard),
// and a DPoP request, whose proof (minted outside the timer, one per
// request) is verified and recorded in the in-memory replay cache.
func BenchmarkHandlerDPoP(b *testing.B) {
	key := vtRSAKey(b, "k")
	is := vtNewIssuer(b, key)
	clock := vtNewClock()
	v := vtNewJWTVerifier(b, is, clock)
	client := vtECKey(b, "client")
	jwk := client.jwk(b)
	bearer := vtSign(b, key, is.claims(clock.Now(), func(c jwt.MapClaims) { c["scope"] = "mcp" }))
	rs, err := New(Config{
		Resource: vtResource, AuthorizationServers: []string{is.srv.URL}, Verifier: v, Scopes: []string{"mcp"},
		DPoP: &DPoPConfig{now: clock.Now},
	})
	require.NoError(b, err)
	d, err := newDPoPChecker(&DPoPConfig{}, vtResource)
	require.NoError(b, err)
	_, jkt, kerr := d.proofKey(&jwt.Token{Header: map[string]any{"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk}, Method: jwt.SigningMethodES256})
	require.Nil(b, kerr)
	bound := vtSign(b, key, is.claims(clock.Now(), func(c jwt.MapClaims) {
		c["scope"] = "mcp"
		c["cnf"] = map[string]any{"jkt": jkt}
	}))
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
	h := rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	var n int
	proof := func() string {
		n++
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
			"jti": "bench-" + strconv.Itoa(n), "htm": http.MethodPost, "htu": vtResource, "iat": clock.Now().Unix(), "ath": athOf(bound),
		})
		tok.Header["typ"], tok.Header["jwk"] = "dpop+jwt", jwk
		s, err := tok.SignedString(client.priv)
		require.NoError(b, err)
		return s
	}
	for _, bc := range []struct {
		name string
		dpop bool
	}{{"bearer", false}, {"dpop", true}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				r := httptest.NewRequest(http.MethodPost, vtResource, strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				if bc.dpop {
					b.StopTimer()
					r.Header.Set("DPoP", proof())
					b.StartTimer()
					r.Header.Set("Authorization", "DPoP "+bound)
				} else {
					r.Header.Set("Authorization", "Bearer "+bearer)
				}
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
