package oauth_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/middleware/oauth"
)

// The metadata is served at the path-inserted form the challenges name and
// at the root form, as RFC 9728 JSON.
func TestMetadataHandler(t *testing.T) {
	t.Parallel()
	e := newGuard(t, func(c *oauth.Config) {
		c.ResourceName = "Vigil test"
		c.ScopesSupported = []string{"mcp", "deploy", "admin"}
	})
	handlers := e.rs.MetadataHandlers()
	paths := slices.Sorted(maps.Keys(handlers))
	assert.Equal(t, []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"}, paths)
	assert.Equal(t, testMetadataURL, e.rs.MetadataURL())

	mux := http.NewServeMux()
	for p, h := range handlers {
		mux.Handle(p, h)
	}
	for _, p := range paths {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "https://mcp.example.com"+p, nil))
		require.Equal(t, http.StatusOK, w.Code, p)
		assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
		assert.Equal(t, "public, max-age=3600", w.Header().Get("Cache-Control"))
		assert.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"))
		assert.JSONEq(t, `{
			"resource": "https://mcp.example.com/mcp",
			"authorization_servers": ["https://as.example.com"],
			"scopes_supported": ["mcp", "deploy", "admin"],
			"bearer_methods_supported": ["header"],
			"resource_name": "Vigil test"
		}`, w.Body.String(), p)
		var md resourceMetadata
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &md))
		assert.Equal(t, testResource, md.Resource)
	}

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodHead, "https://mcp.example.com"+paths[0], nil))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Empty(t, w.Body.String())

	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "https://mcp.example.com"+paths[0], nil))
	assert.Equal(t, http.StatusMethodNotAllowed, w.Code)
	assert.Equal(t, "GET, HEAD, OPTIONS", w.Header().Get("Allow"))
}

// Without ScopesSupported the metadata advertises Config.Scopes and the
// tools' scopes; a resource at the root has only the root path.
func TestMetadataDefaults(t *testing.T) {
	t.Parallel()
	rs, err := oauth.New(oauth.Config{
		Resource:             "http://127.0.0.1:8080",
		AuthorizationServers: []string{"http://127.0.0.1:9000"},
		Verifier:             newVerifier(),
		Scopes:               []string{"mcp"},
		Tools:                toolServer(t, map[string][]string{"admin": {"admin", "mcp"}}),
	})
	require.NoError(t, err)
	handlers := rs.MetadataHandlers()
	assert.Equal(t, []string{"/.well-known/oauth-protected-resource"}, slices.Collect(maps.Keys(handlers)))
	assert.Equal(t, "http://127.0.0.1:8080/.well-known/oauth-protected-resource", rs.MetadataURL())
	w := httptest.NewRecorder()
	handlers["/.well-known/oauth-protected-resource"].ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource", nil))
	assert.JSONEq(t, `{"resource":"http://127.0.0.1:8080","authorization_servers":["http://127.0.0.1:9000"],
		"scopes_supported":["mcp","admin"],"bearer_methods_supported":["header"]}`, w.Body.String())
}

// resourceMetadata is the protected resource metadata a client reads.
type resourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
	ResourceDocumentation  string   `json:"resource_documentation"`
}
