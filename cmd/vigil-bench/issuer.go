package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// issuer is a minimal authorization server for the -auth benchmark: RFC
// 8414 metadata and a JWKS on a loopback port, and RS256 access tokens
// minted in process. It stands for the real provider that make test runs
// (oidc-provider), which would only add noise to a throughput figure.
type issuer struct {
	url string
	key *rsa.PrivateKey
	srv *http.Server
}

// issuerKeyID names the issuer's one signing key.
const issuerKeyID = "bench-1"

// startIssuer serves the metadata and the JWKS until close.
func startIssuer(ctx context.Context) (*issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	jwk, err := jwkset.NewJWKFromKey(&key.PublicKey, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
		ALG: jwkset.AlgRS256, KID: issuerKeyID, USE: jwkset.UseSig,
	}})
	if err != nil {
		return nil, err
	}
	set := jwkset.NewMemoryStorage()
	if err := set.KeyWrite(ctx, jwk); err != nil {
		return nil, err
	}
	keys, err := set.JSONPublic(ctx)
	if err != nil {
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	is := &issuer{url: "http://" + ln.Addr().String(), key: key}
	meta, err := json.Marshal(map[string]any{
		"issuer":                                is.url,
		"jwks_uri":                              is.url + "/jwks",
		"token_endpoint":                        is.url + "/token",
		"response_types_supported":              []string{"token"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	serveJSON := func(body []byte) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}
	}
	mux.Handle("GET /.well-known/oauth-authorization-server", serveJSON(meta))
	mux.Handle("GET /.well-known/openid-configuration", serveJSON(meta))
	mux.Handle("GET /jwks", serveJSON(keys))
	is.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = is.srv.Serve(ln) }()
	return is, nil
}

// token mints an access token for resource, valid for an hour, for the
// subject and client id given, with the scopes.
func (is *issuer) token(resource, subject string, scopes ...string) (string, error) {
	return is.boundToken(resource, subject, "", scopes...)
}

// boundToken is token, DPoP-bound to the key of thumbprint jkt (cnf.jkt,
// RFC 9449) unless "".
func (is *issuer) boundToken(resource, subject, jkt string, scopes ...string) (string, error) {
	now := time.Now()
	claims := jwt.MapClaims{
		"iss":       is.url,
		"sub":       subject,
		"aud":       resource,
		"client_id": subject,
		"scope":     strings.Join(scopes, " "),
		"iat":       now.Unix(),
		"exp":       now.Add(time.Hour).Unix(),
	}
	if jkt != "" {
		claims["cnf"] = map[string]any{"jkt": jkt}
	}
	t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	t.Header["kid"] = issuerKeyID
	s, err := t.SignedString(is.key)
	if err != nil {
		return "", fmt.Errorf("minting a token: %w", err)
	}
	return s, nil
}

func (is *issuer) close() error { return is.srv.Close() }
