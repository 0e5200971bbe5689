package issuertest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer is an authorization server of a test.
type Issuer struct {
	// URL is its issuer identifier, which vigil's -auth-issuer takes.
	URL string
	key *rsa.PrivateKey
}

const keyID = "issuertest-1"

// ClientID is the client_id of every token an Issuer signs.
const ClientID = "issuertest"

// Start starts an Issuer, stopped when the test ends.
func Start(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(i *big.Int) string { return base64.RawURLEncoding.EncodeToString(i.Bytes()) }
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": keyID, "alg": "RS256", "use": "sig", "n": b64(key.N), "e": b64(big.NewInt(int64(key.E))),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	as := &Issuer{key: key}
	srv := httptest.NewUnstartedServer(nil)
	as.URL = "http://" + srv.Listener.Addr().String()
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": as.URL, "jwks_uri": as.URL + "/jwks"})
		case "/jwks":
			_, _ = w.Write(jwks)
		default:
			http.NotFound(w, r)
		}
	})
	srv.Start()
	t.Cleanup(srv.Close)
	return as
}

// Token returns an access token for resource (its aud) to sub, with
// scopes, good for ten minutes.
func (as *Issuer) Token(t testing.TB, resource, sub string, scopes ...string) string {
	t.Helper()
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": as.URL, "sub": sub, "aud": resource, "client_id": ClientID, "scope": strings.Join(scopes, " "),
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
	})
	tok.Header["kid"] = keyID
	signed, err := tok.SignedString(as.key)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}
