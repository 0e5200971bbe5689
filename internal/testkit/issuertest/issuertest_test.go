package issuertest_test

import (
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/testkit/issuertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The issuer's tokens verify with the key its metadata leads to, and
// carry what was asked for; another issuer's do not.
func TestTokenVerifies(t *testing.T) {
	as := issuertest.Start(t)
	get := func(url string, v any) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.NoError(t, json.NewDecoder(resp.Body).Decode(v))
	}
	var meta struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	get(as.URL+"/.well-known/oauth-authorization-server", &meta)
	assert.Equal(t, as.URL, meta.Issuer)
	var set struct{ Keys []struct{ Kid, N, E string } }
	get(meta.JWKSURI, &set)
	require.Len(t, set.Keys, 1)
	num := func(s string) *big.Int {
		b, err := base64.RawURLEncoding.DecodeString(s)
		require.NoError(t, err)
		return new(big.Int).SetBytes(b)
	}
	pub := &rsa.PublicKey{N: num(set.Keys[0].N), E: int(num(set.Keys[0].E).Int64())}
	keyfunc := func(tok *jwt.Token) (any, error) {
		assert.Equal(t, set.Keys[0].Kid, tok.Header["kid"])
		return pub, nil
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(as.Token(t, "http://mcp.example/mcp", "alice", "a", "b"), claims, keyfunc, jwt.WithValidMethods([]string{"RS256"}))
	require.NoError(t, err)
	assert.Equal(t, "alice", claims["sub"])
	assert.Equal(t, "a b", claims["scope"])
	assert.Equal(t, "http://mcp.example/mcp", claims["aud"])
	_, err = jwt.Parse(issuertest.Start(t).Token(t, "http://mcp.example/mcp", "alice"), keyfunc, jwt.WithValidMethods([]string{"RS256"}))
	assert.Error(t, err, "another issuer's key")
}
