package openapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/vocab"
)

// TestLoadManyOperations loads a generated description of 1,000
// operations shaped as the big published ones are (long paths, shared
// component schemas that refer to each other, operationIds that
// sanitize alike or are too long, some missing): every tool is listed, under a unique valid
// name of at most MaxToolNameLen bytes, and every input schema is a
// JSON object without a $ref left. Its time is logged, not asserted.
func TestLoadManyOperations(t *testing.T) {
	paths := map[string]any{}
	for i := range 250 {
		p := fmt.Sprintf("/repos/{owner}/{repo}/very-long-resource-name-number-%d/{id}/sub-resources-with-long-names", i)
		op := func(method string) map[string]any {
			o := map[string]any{
				"summary":    "Operation " + method,
				"parameters": []any{map[string]any{"$ref": "#/components/parameters/owner"}, map[string]any{"name": "repo", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}, map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "integer"}}},
				"responses":  map[string]any{"200": map[string]any{"description": "ok", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Repo"}}}}},
			}
			switch i % 4 {
			case 0: // "repos/get-0-get" and "repos_get-0-get" sanitize alike
				o["operationId"] = fmt.Sprintf("repos/get-%d-%s", i, method)
			case 1:
				o["operationId"] = fmt.Sprintf("repos_get-%d-%s", i-1, method)
			case 2: // over the bound, alike in their first 55 bytes
				o["operationId"] = fmt.Sprintf("repos/%s-%d-%s", strings.Repeat("x", 70), i, method)
			}
			return o
		}
		paths[p] = map[string]any{"get": op("get"), "put": op("put"), "delete": op("delete"), "patch": op("patch")}
	}
	doc := map[string]any{
		"openapi": "3.0.3", "info": map[string]any{"title": "big", "version": "1"},
		"paths": paths,
		"components": map[string]any{
			"parameters": map[string]any{"owner": map[string]any{"name": "owner", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}},
			"schemas": map[string]any{
				"Repo": map[string]any{"type": "object", "properties": map[string]any{"owner": map[string]any{"$ref": "#/components/schemas/User"}, "parent": map[string]any{"$ref": "#/components/schemas/Repo"}}},
				"User": map[string]any{"type": "object", "properties": map[string]any{"repos": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/Repo"}}, "login": map[string]any{"type": "string", "nullable": true}}},
			},
		},
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	start := time.Now()
	a, err := Load(data, "https://api.example")
	require.NoError(t, err)
	t.Logf("loaded %d operations from %d bytes in %v", len(a.Tools()), len(data), time.Since(start))
	require.Len(t, a.Tools(), 1000)
	seen := map[string]bool{}
	for _, tl := range a.Tools() {
		assert.True(t, vocab.ValidToolName(tl.Name), "%q", tl.Name)
		assert.LessOrEqual(t, len(tl.Name), MaxToolNameLen, "%q", tl.Name)
		assert.False(t, seen[tl.Name], "%q twice", tl.Name)
		seen[tl.Name] = true
		assert.NotContains(t, string(tl.InputSchema)+string(tl.OutputSchema), `"$ref"`)
		assert.True(t, json.Valid(tl.InputSchema))
	}
}
