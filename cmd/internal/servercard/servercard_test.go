package servercard_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/servercard"
)

// cardSchema compiles the extension's published schema (testdata/README.md
// says where it comes from) at its ServerCard definition.
func cardSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile("testdata/server-card.schema.json")
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource("mem:///server-card.schema.json", doc))
	s, err := c.Compile("mem:///server-card.schema.json#/$defs/ServerCard")
	require.NoError(t, err)
	return s
}

var server = servercard.Server{
	Name: "io.github.vigil-mcp/vigil", Version: "0.9.0", Description: "Vigil, an observable MCP server and gateway",
	Versions: []string{"2026-07-28", "2025-11-25"}, Repository: "https://github.com/vigil-mcp/vigil",
}

// TestServerCardValidates: the card of the default endpoint and of a named
// one, with and without authorization, validate against the extension's
// schema; a card the schema must refuse (no $schema) is refused, so the
// check can fail.
func TestServerCardValidates(t *testing.T) {
	schema := cardSchema(t)
	authorized := server
	authorized.ResourceMetadata = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	for _, tc := range []struct {
		name string
		s    servercard.Server
		e    servercard.Endpoint
	}{
		{"default", server, servercard.Endpoint{URL: "http://127.0.0.1:8080/mcp"}},
		{"named", server, servercard.Endpoint{Name: "github", URL: "https://mcp.example.com/mcp/github"}},
		{"authorized", authorized, servercard.Endpoint{URL: "https://mcp.example.com/mcp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(servercard.New(tc.s, tc.e))
			require.NoError(t, err)
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			require.NoError(t, err)
			require.NoError(t, schema.Validate(v), "%s", raw)
		})
	}
	bad := map[string]any{"name": "io.github.vigil-mcp/vigil", "version": "1", "description": "x"}
	require.Error(t, schema.Validate(bad), "a card without $schema")
	card := servercard.New(authorized, servercard.Endpoint{URL: "https://mcp.example.com/mcp"})
	require.Len(t, card.Remotes, 1)
	assert.Equal(t, "Authorization", card.Remotes[0].Headers[0].Name)
	assert.True(t, card.Remotes[0].Headers[0].IsSecret)
	assert.Equal(t, map[string]any{"protectedResourceMetadata": authorized.ResourceMetadata}, card.Meta[servercard.MetaKey])
}

// TestServerCardCatalog: the catalog lists one entry per endpoint, each the
// card's media type at the endpoint's URL and /server-card, with distinct
// identifiers.
func TestServerCardCatalog(t *testing.T) {
	c := servercard.NewCatalog(server, []servercard.Endpoint{{URL: "https://mcp.example.com/mcp"}, {Name: "github", URL: "https://mcp.example.com/mcp/github"}})
	assert.Equal(t, servercard.Catalog{SpecVersion: "1.0", Entries: []servercard.Entry{
		{Identifier: "urn:air:mcp.example.com:mcp:vigil", Type: servercard.MediaType, URL: "https://mcp.example.com/mcp/server-card"},
		{Identifier: "urn:air:mcp.example.com:mcp:vigil.github", Type: servercard.MediaType, URL: "https://mcp.example.com/mcp/github/server-card"},
	}}, c)
}

// TestServerCardHTTP: the handler serves the card with its media type,
// CORS for any origin and an ETag; If-None-Match naming it (or a list
// holding it, or W/ of it) is answered 304 with no body, another 200;
// OPTIONS is a preflight; POST is 405; a document the path does not name
// is 404.
func TestServerCardHTTP(t *testing.T) {
	card := servercard.New(server, servercard.Endpoint{URL: "http://127.0.0.1:8080/mcp"})
	h := servercard.Handler(servercard.MediaType, func(r *http.Request) any {
		if r.URL.Path != "/mcp/server-card" {
			return nil
		}
		return card
	})
	do := func(method, path string, header map[string]string) *httptest.ResponseRecorder {
		r := httptest.NewRequestWithContext(t.Context(), method, path, nil)
		for k, v := range header {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := do(http.MethodGet, "/mcp/server-card", map[string]string{"Accept": servercard.MediaType, "Origin": "https://app.example"})
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, servercard.MediaType, w.Header().Get("Content-Type"))
	assert.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "ETag", w.Header().Get("Access-Control-Expose-Headers"))
	etag := w.Header().Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{32}"$`, etag)
	var got servercard.Card
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
	assert.Equal(t, card, got)

	for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
		w = do(http.MethodGet, "/mcp/server-card", map[string]string{"If-None-Match": inm})
		assert.Equal(t, http.StatusNotModified, w.Code, inm)
		assert.Empty(t, w.Body.Bytes(), inm)
		assert.Equal(t, etag, w.Header().Get("ETag"))
	}
	w = do(http.MethodGet, "/mcp/server-card", map[string]string{"If-None-Match": `"stale"`})
	assert.Equal(t, http.StatusOK, w.Code)
	w = do(http.MethodOptions, "/mcp/server-card", map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "GET"})
	assert.Equal(t, http.StatusNoContent, w.Code)
	assert.Equal(t, "*", w.Header().Get("Access-Control-Allow-Origin"))
	assert.Contains(t, w.Header().Get("Access-Control-Allow-Headers"), "If-None-Match")
	assert.Equal(t, http.StatusMethodNotAllowed, do(http.MethodPost, "/mcp/server-card", nil).Code)
	assert.Equal(t, http.StatusNotFound, do(http.MethodGet, "/mcp/other/server-card", nil).Code)
}
