package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// petsDescription is a small OpenAPI 3.1 description of the REST API
// restPets serves; its server is a placeholder, the test gives the base.
const petsDescription = `{"openapi":"3.1.0","info":{"title":"pets","version":"1"},
"servers":[{"url":"https://placeholder.invalid/v1"}],
"paths":{"/pets/{petId}":{"get":{"operationId":"getPet","summary":"One pet",
	"parameters":[{"name":"petId","in":"path","required":true,"schema":{"type":"string"}}],
	"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"object","properties":{"name":{"type":"string"}}}}}}}}}}}`

// restPets serves GET /v1/pets/{id}: the pet named id, 404 for "gone";
// each request's path and Authorization header go to got.
func restPets(t *testing.T, got chan<- [2]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- [2]string{r.URL.EscapedPath(), r.Header.Get("Authorization")}
		id, _ := strings.CutPrefix(r.URL.EscapedPath(), "/v1/pets/")
		if id == "gone" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"no such pet"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"name": id})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestOpenAPIUpstream mounts a REST API from its OpenAPI description:
// its operation is listed as a tool with its hints and schemas, a call
// reaches the API at the operator's base URL with the upstream's own
// header, a 404 is a tool error with the API's body, and an argument the
// schema refuses never reaches the API.
func TestOpenAPIUpstream(t *testing.T) {
	testkit.Watchdog(t)
	got := make(chan [2]string, 10)
	api := restPets(t, got)
	c := front(t, gateway.Upstream{Name: "pets", OpenAPI: []byte(petsDescription), URL: api.URL + "/v1", Header: http.Header{"Authorization": {"Bearer api-key"}}})

	tools := c.ListTools()
	require.Len(t, tools, 1)
	assert.Equal(t, "getPet", tools[0].Name)
	assert.Equal(t, "One pet", tools[0].Title)
	require.NotNil(t, tools[0].Annotations)
	assert.True(t, *tools[0].Annotations.ReadOnlyHint)
	assert.JSONEq(t, `{"type":"object","properties":{"name":{"type":"string"}}}`, string(tools[0].OutputSchema))

	res := c.CallTool("getPet", map[string]any{"petId": "rex/../x"})
	assert.False(t, res.IsError)
	assert.JSONEq(t, `{"name":"rex%2F..%2Fx"}`, res.Text())
	structured, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"rex%2F..%2Fx"}`, string(structured))
	assert.Equal(t, [2]string{"/v1/pets/rex%2F..%2Fx", "Bearer api-key"}, <-got)

	res = c.CallTool("getPet", map[string]any{"petId": "gone"})
	<-got
	assert.True(t, res.IsError)
	assert.Equal(t, `HTTP 404 Not Found: {"error":"no such pet"}`, res.Text())

	res = c.CallTool("getPet", map[string]any{"petId": 7})
	assert.True(t, res.IsError, "the arguments are checked against the schema")
	assert.Contains(t, res.Text(), `invalid arguments for tool "getPet"`)
	res = c.CallTool("getPet", map[string]any{"petId": ".."})
	assert.True(t, res.IsError, "a dot segment is refused")
	assert.Contains(t, res.Text(), `may not be empty, "." or ".."`)
	select {
	case r := <-got:
		t.Fatalf("a refused call reached the API: %v", r)
	default:
	}
}

// TestOpenAPIUpstreamCatalog checks that the operator's catalog shapes an
// OpenAPI upstream's tools as any upstream's: a tool renamed and
// described, its path parameter fixed (neither listed nor settable, sent
// as the catalog says), another hidden.
func TestOpenAPIUpstreamCatalog(t *testing.T) {
	testkit.Watchdog(t)
	got := make(chan [2]string, 10)
	api := restPets(t, got)
	const description = `{"openapi":"3.0.3","info":{"title":"pets","version":"1"},
"paths":{"/pets/{petId}":{"get":{"operationId":"getPet",
	"parameters":[{"name":"petId","in":"path","required":true,"schema":{"type":"string"}}],
	"responses":{"200":{"description":"ok"}}},
	"delete":{"operationId":"deletePet",
	"parameters":[{"name":"petId","in":"path","required":true,"schema":{"type":"string"}}],
	"responses":{"204":{"description":"gone"}}}}}}`
	cat, err := gateway.ParseCatalog([]byte(`upstreams:
  pets:
    tools:
      getPet:
        name: house_pet
        description: The house's pet.
        arguments:
          petId: {fixed: "rex"}
      deletePet: {hide: true}
`))
	require.NoError(t, err)
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "pets", OpenAPI: []byte(description), URL: api.URL + "/v1"}}, Catalog: cat})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	c := mcptest.Connect(t, srv)

	tools := c.ListTools()
	require.Len(t, tools, 1)
	assert.Equal(t, "house_pet", tools[0].Name)
	assert.Equal(t, "The house's pet.", tools[0].Description)
	assert.NotContains(t, string(tools[0].InputSchema), "petId")
	res := c.CallTool("house_pet", nil)
	assert.False(t, res.IsError, "%s", res.Text())
	assert.Equal(t, "/v1/pets/rex", (<-got)[0])
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "deletePet", "arguments": map[string]any{"petId": "rex"}})
	require.NotNil(t, rpcErr, "a hidden operation is not callable")
	select {
	case r := <-got:
		t.Fatalf("a hidden operation reached the API: %v", r)
	default:
	}
}

// TestOpenAPIUpstreamRefused checks the OpenAPI upstreams Mount refuses,
// each saying why.
func TestOpenAPIUpstreamRefused(t *testing.T) {
	testkit.Watchdog(t)
	for name, c := range map[string]struct {
		up   gateway.Upstream
		want string
	}{
		"swagger 2":  {gateway.Upstream{Name: "p", OpenAPI: []byte(`{"swagger":"2.0"}`)}, "Swagger 2.0"},
		"command":    {gateway.Upstream{Name: "p", OpenAPI: []byte(petsDescription), Command: []string{"x"}}, "has no Command"},
		"bad base":   {gateway.Upstream{Name: "p", OpenAPI: []byte(petsDescription), URL: "ftp://h"}, "not an absolute http"},
		"not a spec": {gateway.Upstream{Name: "p", OpenAPI: []byte(`{`)}, "not a JSON or YAML"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := server.New()
			t.Cleanup(func() { _ = srv.Close() })
			_, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{c.up}})
			require.ErrorContains(t, err, c.want)
			assert.Empty(t, srv.ToolNames())
		})
	}
}
