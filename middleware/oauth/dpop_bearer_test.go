package oauth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/wwwauth"
)

// TestBoundTokenUnderBearerRefused: a DPoP-bound JWT (cnf.jkt) presented
// as Bearer to a resource server that does not even accept DPoP is
// refused 401 invalid_token (RFC 9449 §7.2: whoever holds the token
// without its key gets nothing); the same token without cnf passes.
func TestBoundTokenUnderBearerRefused(t *testing.T) {
	as, clock := vtECKey(t, "as"), vtNewClock()
	is := vtNewIssuer(t, as)
	rs, err := New(Config{Resource: vtResource, AuthorizationServers: []string{is.srv.URL}, Verifier: vtNewJWTVerifier(t, is, clock)})
	require.NoError(t, err)
	h := rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	send := func(token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, vtResource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	bound := vtSign(t, as, is.claims(clock.Now(), func(c jwt.MapClaims) {
		c["cnf"] = map[string]any{"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}
	}))
	w := send(bound)
	require.Equal(t, http.StatusUnauthorized, w.Code, "a DPoP-bound token as Bearer")
	_, params, err := wwwauth.Parse(w.Header().Get("WWW-Authenticate"))
	require.NoError(t, err)
	assert.Equal(t, "invalid_token", params["error"])
	assert.Equal(t, http.StatusOK, send(vtSign(t, as, is.claims(clock.Now()))).Code, "the same token unbound")
}
