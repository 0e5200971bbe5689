package connect

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An upstream whose RFC 9728 metadata names another resource than the URL
// the gateway asked for is refused, the error naming both URLs, whether
// the metadata was found through the 401's resource_metadata or at the
// well-known URI; metadata naming the upstream's URL is used.
func TestDiscoverIssuerRefusesAnotherResource(t *testing.T) {
	var resource string
	var challenge bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" || r.URL.Path == "/meta" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": resource, "authorization_servers": []string{"https://as.example"}})
			return
		}
		if challenge {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/meta"`)
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	up := srv.URL + "/mcp"
	for _, challenge = range []bool{true, false} {
		resource = "https://other.example/mcp"
		_, err := discoverIssuer(t.Context(), srv.Client(), up)
		require.Error(t, err, "challenge %v", challenge)
		assert.Contains(t, err.Error(), `names the resource "https://other.example/mcp", not `+up, "challenge %v", challenge)
		assert.Contains(t, err.Error(), "RFC 9728")

		resource = ""
		_, err = discoverIssuer(t.Context(), srv.Client(), up)
		require.ErrorContains(t, err, `names the resource "", not `+up, "no resource: challenge %v", challenge)

		resource = up
		issuer, err := discoverIssuer(t.Context(), srv.Client(), up)
		require.NoError(t, err, "challenge %v", challenge)
		assert.Equal(t, "https://as.example", issuer)
	}
}

// A resource is its URL, identical, but for the "/" an empty path means.
func TestSameResource(t *testing.T) {
	assert.True(t, sameResource("https://a.example/mcp", "https://a.example/mcp"))
	assert.True(t, sameResource("https://a.example/", "https://a.example"))
	assert.False(t, sameResource("https://a.example/mcp/", "https://a.example/mcp"))
	assert.False(t, sameResource("https://b.example/mcp", "https://a.example/mcp"))
	assert.False(t, sameResource("https://a.example:8443/", "https://a.example"))
	assert.False(t, sameResource("http://a.example/", "https://a.example"))
}
