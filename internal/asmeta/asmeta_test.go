package asmeta_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/asmeta"
)

// TestDiscover: the RFC 8414 document is read with the fields both users
// need (the gateway's revocation endpoint and RFC 9207 flag among them);
// without it, the OpenID Connect one; a document naming another issuer
// stops the search; a document that is not JSON is refused.
func TestDiscover(t *testing.T) {
	var srv *httptest.Server
	docs := map[string]map[string]any{}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if doc["issuer"] == "" {
			doc["issuer"] = srv.URL
		}
		if doc["text"] != nil {
			w.Header().Set("Content-Type", "text/plain")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)

	docs["/.well-known/oauth-authorization-server"] = map[string]any{
		"issuer": "", "authorization_endpoint": "a", "token_endpoint": "t", "revocation_endpoint": "r",
		"code_challenge_methods_supported": []string{"S256"}, "authorization_response_iss_parameter_supported": true,
	}
	md, err := asmeta.Discover(t.Context(), srv.Client(), srv.URL)
	require.NoError(t, err)
	assert.Equal(t, &asmeta.Server{
		Issuer: srv.URL, AuthorizationEndpoint: "a", TokenEndpoint: "t", RevocationEndpoint: "r",
		CodeChallengeMethodsSupported: []string{"S256"}, AuthorizationResponseIssParameterSupported: true,
	}, md)

	delete(docs, "/.well-known/oauth-authorization-server")
	docs["/.well-known/openid-configuration"] = map[string]any{"issuer": "", "token_endpoint": "oidc"}
	md, err = asmeta.Discover(t.Context(), srv.Client(), srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "oidc", md.TokenEndpoint, "the OpenID Connect document when there is no RFC 8414 one")

	docs["/.well-known/oauth-authorization-server"] = map[string]any{"issuer": "https://evil.example"}
	_, err = asmeta.Discover(t.Context(), srv.Client(), srv.URL)
	require.ErrorIs(t, err, asmeta.ErrIssuerMismatch, "another issuer stops the search")

	docs["/.well-known/oauth-authorization-server"] = map[string]any{"issuer": "", "text": true}
	delete(docs, "/.well-known/openid-configuration")
	_, err = asmeta.Discover(t.Context(), srv.Client(), srv.URL)
	require.ErrorContains(t, err, "is not JSON")

	_, err = asmeta.Discover(t.Context(), srv.Client(), "ftp://x")
	require.ErrorContains(t, err, "not an http(s) URL")
}
