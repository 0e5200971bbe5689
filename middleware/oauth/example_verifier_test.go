package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/vigil-mcp/vigil/middleware/oauth"
)

// ExampleNewVerifier verifies a JWT access token issued by an
// authorization server (here an httptest server publishing RFC 8414
// metadata and a JWK Set) for the resource https://mcp.example.com/mcp:
// without an IntrospectionEndpoint, tokens are JWTs checked against the
// issuer's keys.
func ExampleNewVerifier() {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	point, err := key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		panic(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	var as *httptest.Server
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": as.URL, "jwks_uri": as.URL + "/jwks"})
		case "/jwks":
			_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
				"kty": "EC", "crv": "P-256", "kid": "key-1", "alg": "ES256", "use": "sig",
				"x": b64(point[1:33]), "y": b64(point[33:]),
			}}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer as.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := oauth.NewVerifier(ctx, oauth.VerifierConfig{
		Issuer:    as.URL,
		Audiences: []string{"https://mcp.example.com/mcp"},
		Claims:    []string{"tenant"},
	})
	if err != nil {
		panic(err)
	}
	defer func() { _ = v.Close() }()

	// The authorization server issues a token for this resource.
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": as.URL, "sub": "alice", "aud": "https://mcp.example.com/mcp",
		"exp": time.Now().Add(time.Hour).Unix(), "scope": "files:read files:write",
		"client_id": "desktop-app", "tenant": "acme",
	})
	tok.Header["kid"] = "key-1"
	token, err := tok.SignedString(key)
	if err != nil {
		panic(err)
	}

	p, err := v.Verify(ctx, token)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Subject, p.ClientID, p.Scopes, p.Claims["tenant"])

	// A token for another resource is refused.
	other := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": as.URL, "sub": "alice", "aud": "https://other.example.com/mcp",
		"exp": time.Now().Add(time.Hour).Unix(),
	})
	other.Header["kid"] = "key-1"
	otherToken, err := other.SignedString(key)
	if err != nil {
		panic(err)
	}
	_, err = v.Verify(ctx, otherToken)
	if e, ok := errors.AsType[*oauth.Error](err); ok {
		fmt.Println(e.Reason)
	}
	// Output:
	// alice desktop-app [files:read files:write] acme
	// wrong_audience
}

// ExampleNewVerifier_introspection asks an RFC 7662 introspection endpoint
// (here an httptest server) about an opaque token: setting
// IntrospectionEndpoint selects introspection.
func ExampleNewVerifier_introspection() {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, secret, ok := r.BasicAuth(); !ok || id != "mcp-server" || secret != "s3cret" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostFormValue("token") != "opaque-123" {
			_, _ = w.Write([]byte(`{"active":false}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"active": true, "sub": "alice", "client_id": "desktop-app", "scope": "files:read",
			"aud": "https://mcp.example.com/mcp", "exp": time.Now().Add(time.Hour).Unix(),
		})
	}))
	defer as.Close()

	ctx := context.Background()
	v, err := oauth.NewVerifier(ctx, oauth.VerifierConfig{
		IntrospectionEndpoint: as.URL,
		ClientID:              "mcp-server",
		ClientSecret:          "s3cret",
		Issuer:                "https://as.example.com",
		Audiences:             []string{"https://mcp.example.com/mcp"},
	})
	if err != nil {
		panic(err)
	}
	defer func() { _ = v.Close() }()
	p, err := v.Verify(ctx, "opaque-123")
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Subject, p.Issuer, strings.Join(p.Scopes, " "))
	_, err = v.Verify(ctx, "revoked-456")
	if e, ok := errors.AsType[*oauth.Error](err); ok {
		fmt.Println(e.Reason)
	}
	// Output:
	// alice https://as.example.com files:read
	// invalid_token
}
