package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// shopDescription has operations under two paths and three tags.
const shopDescription = `{"openapi":"3.0.3","info":{"title":"shop","version":"1"},
"paths":{
 "/pets/{petId}":{"get":{"operationId":"getPet","tags":["pets"],
	"parameters":[{"name":"petId","in":"path","required":true,"schema":{"type":"string"}}],
	"responses":{"200":{"description":"ok"}}}},
 "/pets/{petId}/toys":{"get":{"operationId":"listToys","tags":["pets","toys"],
	"parameters":[{"name":"petId","in":"path","required":true,"schema":{"type":"string"}}],
	"responses":{"200":{"description":"ok"}}}},
 "/petshops":{"get":{"operationId":"listShops","tags":["stores"],"responses":{"200":{"description":"ok"}}}},
 "/stores":{"get":{"operationId":"listStores","tags":["stores"],"responses":{"200":{"description":"ok"}}}}}}`

// mountShop mounts shopDescription as the upstream shop with the catalog
// file, returning Mount's error.
func mountShop(t *testing.T, file string) (*server.Server, *gateway.Gateway, error) {
	t.Helper()
	api := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(api.Close)
	cat, err := gateway.ParseCatalog([]byte(file))
	if err != nil {
		return nil, nil, err
	}
	srv := server.New()
	t.Cleanup(func() { _ = srv.Close() })
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "shop", OpenAPI: []byte(shopDescription), URL: api.URL}}, Catalog: cat})
	if err == nil {
		t.Cleanup(func() { _ = g.Close() })
	}
	return srv, g, err
}

// TestOpenAPISelection checks the catalog's selectors of an OpenAPI
// upstream's operations: by tag, and by a glob of path templates that
// selects the paths under the one it matches, a path glob's '*' staying
// in its segment; besides a glob of names; a reload applies new ones.
func TestOpenAPISelection(t *testing.T) {
	testkit.Watchdog(t)
	for file, want := range map[string][]string{
		`default: {tools: ["shop/tag:stores"]}`:                {"listShops", "listStores"},
		`default: {tools: ["shop/tag:toys"]}`:                  {"listToys"},
		`default: {tools: ["shop/path:/pets/{petId}"]}`:        {"getPet", "listToys"},
		`default: {tools: ["shop/path:/pets*"]}`:               {"getPet", "listToys", "listShops"},
		`default: {tools: ["shop/path:/*/{petId}/toys"]}`:      {"listToys"},
		`default: {tools: ["shop/path:/stores", "shop/get*"]}`: {"getPet", "listStores"},
	} {
		t.Run(file, func(t *testing.T) {
			srv, _, err := mountShop(t, file+"\n")
			require.NoError(t, err)
			assert.ElementsMatch(t, want, toolNames(mcptest.Connect(t, srv)))
		})
	}

	srv, g, err := mountShop(t, `default: {tools: ["shop/tag:toys"]}`+"\n")
	require.NoError(t, err)
	c := mcptest.Connect(t, srv)
	cat, err := gateway.ParseCatalog([]byte(`default: {tools: ["shop/tag:pets"]}` + "\n"))
	require.NoError(t, err)
	require.NoError(t, g.SetCatalog(cat))
	assert.ElementsMatch(t, []string{"getPet", "listToys"}, toolNames(c))
	cat, err = gateway.ParseCatalog([]byte(`default: {tools: ["shop/tag:pet"]}` + "\n"))
	require.NoError(t, err)
	require.ErrorContains(t, g.SetCatalog(cat), `no operation of upstream shop has the tag "pet" (its tags: pets, stores, toys)`)
}

// TestOpenAPISelectionRefused checks the selectors refused at start, each
// with a message that says why.
func TestOpenAPISelectionRefused(t *testing.T) {
	testkit.Watchdog(t)
	for file, want := range map[string]string{
		`default: {tools: ["shop/tag:"]}`:                   `"shop/tag:": want UPSTREAM/GLOB`,
		`default: {tools: ["shop/path:pets"]}`:              `"shop/path:pets": want UPSTREAM/GLOB`,
		`default: {tools: ["shop/path:/pets/["]}`:           `"shop/path:/pets/[": want UPSTREAM/GLOB`,
		`default: {prompts: ["shop/tag:pets"]}`:             `prompts: "shop/tag:pets": want UPSTREAM/GLOB`,
		`default: {tools: ["shop/tag:food"]}`:               `endpoint default: shop/tag:food: no operation of upstream shop has the tag "food" (its tags: pets, stores, toys)`,
		`default: {tools: ["shop/path:/owners*"]}`:          `endpoint default: shop/path:/owners*: no path of upstream shop matches "/owners*"`,
		`endpoints: {kennel: {tools: ["shop/path:/dogs"]}}`: `endpoint kennel: shop/path:/dogs: no path`,
	} {
		t.Run(file, func(t *testing.T) {
			_, _, err := mountShop(t, file+"\n")
			require.ErrorContains(t, err, want)
		})
	}

	// On an upstream that is not an OpenAPI one.
	cat, err := gateway.ParseCatalog([]byte(`default: {tools: ["mcp/tag:pets"]}` + "\n"))
	require.NoError(t, err)
	srv := server.New()
	t.Cleanup(func() { _ = srv.Close() })
	_, err = gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "mcp", URL: "http://127.0.0.1:1/mcp"}}, Catalog: cat})
	require.ErrorContains(t, err, "endpoint default: mcp/tag:pets: upstream mcp is not an OpenAPI upstream")
}
