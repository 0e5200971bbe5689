package openapi

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadPets loads testdata/pets.yaml with base.
func loadPets(t *testing.T, base string) *API {
	t.Helper()
	data, err := os.ReadFile("testdata/pets.yaml")
	require.NoError(t, err)
	a, err := Load(data, base)
	require.NoError(t, err)
	return a
}

// toolByName returns a's tool name.
func toolByName(t *testing.T, a *API, name string) Tool {
	t.Helper()
	for _, tl := range a.Tools() {
		if tl.Name == name {
			return tl
		}
	}
	require.Failf(t, "no such tool", "%s", name)
	return Tool{}
}

// decode decodes a schema into a map.
func decode(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// TestLoadBuildsTools checks names, hints, titles and schemas of the
// pets description: operationIds sanitized, a name made from method and
// path without one, forbidden headers left out, $refs inlined with the
// recursion cut, 3.0's nullable and boolean bounds rewritten, and a
// non-object output wrapped.
func TestLoadBuildsTools(t *testing.T) {
	a := loadPets(t, "")
	assert.Equal(t, "https://pets.example/v1", a.Base())
	var names []string
	for _, tl := range a.Tools() {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"listPets", "post_pets", "showPet", "replace_pet", "delete_pets_petId"}, names)

	list := toolByName(t, a, "listPets")
	assert.True(t, list.ReadOnly)
	assert.False(t, list.Idempotent)
	assert.Equal(t, "List pets", list.Title)
	in := decode(t, list.InputSchema)
	props := in["properties"].(map[string]any)
	assert.Contains(t, props, "X-Trace")
	assert.NotContains(t, props, "Authorization", "an authentication header is the operator's")
	assert.NotContains(t, props, "Connection", "a hop-by-hop header is no argument's")
	assert.Equal(t, map[string]any{"type": "integer", "minimum": 1.0, "exclusiveMaximum": 100.0}, props["limit"])
	out := decode(t, list.OutputSchema)
	assert.Equal(t, []any{"result"}, out["required"], "an array response is wrapped as result")

	show := toolByName(t, a, "showPet")
	assert.Equal(t, "One pet by id.", show.Description)
	in = decode(t, show.InputSchema)
	assert.Equal(t, []any{"petId"}, in["required"])
	pet := decode(t, show.OutputSchema)
	petProps := pet["properties"].(map[string]any)
	assert.Equal(t, []any{"string", "null"}, petProps["tag"].(map[string]any)["type"])
	assert.Contains(t, petProps["parent"].(map[string]any)["description"], "recursive reference")
	assert.NotContains(t, string(show.OutputSchema), "$ref")

	put := toolByName(t, a, "replace_pet")
	assert.True(t, put.Idempotent)
	assert.Nil(t, put.OutputSchema)
	assert.Contains(t, decode(t, put.InputSchema)["properties"], "body")
	post := toolByName(t, a, "post_pets")
	assert.Equal(t, []any{"body"}, decode(t, post.InputSchema)["required"])
}

// TestLoadRefuses checks the descriptions and bases Load refuses, each
// with a message that says why.
func TestLoadRefuses(t *testing.T) {
	pets, err := os.ReadFile("testdata/pets.yaml")
	require.NoError(t, err)
	for name, c := range map[string]struct {
		data, base, want string
	}{
		"swagger 2":        {`{"swagger":"2.0","info":{"title":"x","version":"1"},"paths":{}}`, "", "Swagger 2.0"},
		"no version":       {`{"info":{}}`, "", "no openapi field"},
		"version 2":        {`{"openapi":"2.0"}`, "", "not supported"},
		"version a number": {"openapi: 3.1\n", "", `a string, "3.0.3"`},
		"not a document":   {"{", "", "not a JSON or YAML"},
		"external ref":     {`{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"other.json#/X"}}}}}}}}}`, "http://h", "openapi"},
		"relative server":  {`{"openapi":"3.0.3","info":{"title":"x","version":"1"},"servers":[{"url":"/v3"}],"paths":{}}`, "", "not an absolute http"},
		"credentials":      {string(pets), "https://user:pw@h/", "user information"},
		"query in base":    {string(pets), "https://h/?a=1", "query or fragment"},
		"other scheme":     {string(pets), "file:///etc", "not an absolute http"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load([]byte(c.data), c.base)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.NotContains(t, err.Error(), "pw", "a password never reaches an error")
		})
	}
}

// TestToolNames checks the naming rule: sanitized, at most MaxToolNameLen
// bytes, unique, and the same for the same description.
func TestToolNames(t *testing.T) {
	taken := map[string]bool{}
	assert.Equal(t, "get_users_id_repos", toolName("", "GET", "/users/{id}/repos", taken))
	assert.Equal(t, "get_users_id_repos_2", toolName("", "GET", "/users/{id}/repos/", taken))
	assert.Equal(t, "get_users_id_repos_3", toolName("get users/{id} repos", "GET", "/x", taken))
	long := strings.Repeat("a", 100)
	n1 := toolName(long, "GET", "/", taken)
	n2 := toolName(long, "GET", "/", taken)
	assert.Len(t, n1, MaxToolNameLen)
	assert.LessOrEqual(t, len(n2), MaxToolNameLen)
	assert.NotEqual(t, n1, n2)
	assert.Equal(t, n1, toolName(long, "GET", "/", map[string]bool{}), "the same name for the same description")
	assert.Equal(t, "get", toolName("", "GET", "/", taken))
	assert.Equal(t, "op_2", toolName("op_2", "GET", "/", taken))
	assert.Equal(t, "op", toolName("op", "GET", "/", taken))
	assert.Equal(t, "op_3", toolName("op", "GET", "/", taken), "a suffix skips a name an operation took")
}

// TestLoad31 checks an OpenAPI 3.1 description: its JSON Schema 2020-12
// keywords kept as they are, keywords beside a $ref applied with it, and
// an operation without responses content having no output schema.
func TestLoad31(t *testing.T) {
	a, err := Load([]byte(`{"openapi":"3.1.0","info":{"title":"x","version":"1"},
	"paths":{"/things/{id}":{"patch":{"operationId":"patchThing",
		"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":["integer","string"]}}],
		"requestBody":{"content":{"application/merge-patch+json":{"schema":{"$ref":"#/components/schemas/Thing","description":"changes"}}}},
		"responses":{"204":{"description":"done"}}}}},
	"components":{"schemas":{"Thing":{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0,"maximum":9007199254740993}}}}}}`), "http://h/")
	require.NoError(t, err)
	tl := toolByName(t, a, "patchThing")
	assert.False(t, tl.ReadOnly)
	assert.False(t, tl.Idempotent)
	assert.Nil(t, tl.OutputSchema)
	props := decode(t, tl.InputSchema)["properties"].(map[string]any)
	assert.Equal(t, []any{"integer", "string"}, props["id"].(map[string]any)["type"])
	body := props["body"].(map[string]any)["allOf"].([]any)
	assert.Equal(t, map[string]any{"type": "number", "exclusiveMinimum": 0.0, "maximum": 9007199254740993.0}, body[0].(map[string]any)["properties"].(map[string]any)["n"])
	assert.Equal(t, map[string]any{"description": "changes"}, body[1])
	assert.Contains(t, string(tl.InputSchema), `"maximum":9007199254740993`, "a bound of a $ref'd schema keeps its digits")
	req, _, err := a.request(t.Context(), "patchThing", json.RawMessage(`{"id":7,"body":{"n":1}}`))
	require.NoError(t, err)
	assert.Equal(t, "application/merge-patch+json", req.Header.Get("Content-Type"), "the body goes as the description's media type")
	assert.Equal(t, "http://h/things/7", req.URL.String())
}
