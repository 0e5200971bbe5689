package server_test

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// extAppsDir is the MCP Apps extension's npm package, installed by `make
// test` (make apps-deps) from testdata/apps's lockfile.
const extAppsDir = "testdata/apps/node_modules/@modelcontextprotocol/ext-apps"

// extAppsSchema returns a validator for the definition name of the
// extension's own JSON Schema (dist/src/generated/schema.json). When the
// package is missing it skips the test, or fails it in CI (CI=true).
func extAppsSchema(t *testing.T, name string) *jsonschema.Resolved {
	t.Helper()
	testkit.External(t, "the MCP Apps extension's npm package")
	data, err := os.ReadFile(filepath.Join(extAppsDir, "dist", "src", "generated", "schema.json"))
	if errors.Is(err, os.ErrNotExist) {
		msg := extAppsDir + " is missing; run `make apps-deps` (npm ci --prefix server/testdata/apps)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	require.NoError(t, err)
	var doc struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(data, &doc))
	require.Contains(t, doc.Defs, name)
	var s jsonschema.Schema
	require.NoError(t, json.Unmarshal(doc.Defs[name], &s))
	rs, err := s.Resolve(nil)
	require.NoError(t, err)
	return rs
}

// validates checks raw (JSON) against rs.
func validates(t *testing.T, rs *jsonschema.Resolved, raw json.RawMessage, what string) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), what)
	assert.NoError(t, rs.Validate(v), "%s: %s", what, raw)
}

// TestViewsMatchExtAppsSchema checks Vigil's MCP Apps wire format against
// the extension's own package (@modelcontextprotocol/ext-apps 2.0.4): the
// tools' _meta.ui against McpUiToolMeta and the view's _meta.ui, listed and
// read, against McpUiResourceMeta, in a 2025 session and in 2026-07-28
// requests over Streamable HTTP; and the MIME type and extension id against
// the constants of its server helpers.
func TestViewsMatchExtAppsSchema(t *testing.T) {
	testkit.Watchdog(t)
	toolMeta := extAppsSchema(t, "McpUiToolMeta")
	resourceMeta := extAppsSchema(t, "McpUiResourceMeta")

	var bad any
	require.NoError(t, json.Unmarshal([]byte(`{"permissions":{"usb":{}}}`), &bad))
	require.Error(t, resourceMeta.Validate(bad), "the schema rejects what Vigil's validation rejects")

	helpers, err := os.ReadFile(filepath.Join(extAppsDir, "dist", "src", "server", "index.js"))
	require.NoError(t, err)
	assert.Contains(t, string(helpers), `"`+server.ViewMIMEType+`"`, "RESOURCE_MIME_TYPE")
	assert.Contains(t, string(helpers), `"`+server.ExtensionUI+`"`, "EXTENSION_ID")

	srv := appsServer(t)
	h := streamable.New(srv)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
		_ = srv.Close()
	})
	session := mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: ts.URL}))
	session.Initialize("", uiCaps)
	for era, call := range map[string]caller{"2025 session": pipeCaller(session), "2026-07-28": post2026(t, ts.URL, uiCaps)} {
		tools := listUITools(t, call)
		require.Len(t, tools, 4, era)
		for name, tool := range tools {
			if ui, ok := tool.Meta["ui"]; ok {
				validates(t, toolMeta, ui, era+": tool "+name)
			}
		}
		raw, rpcErr := call("resources/list", map[string]any{})
		require.Nil(t, rpcErr, era)
		var list struct {
			Resources []struct {
				URI  string                     `json:"uri"`
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"resources"`
		}
		require.NoError(t, json.Unmarshal(raw, &list))
		require.Len(t, list.Resources, 1, era)
		validates(t, resourceMeta, list.Resources[0].Meta["ui"], era+": resources/list")
		raw, rpcErr = call("resources/read", map[string]any{"uri": dashboardURI})
		require.Nil(t, rpcErr, era)
		var read struct {
			Contents []struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"contents"`
		}
		require.NoError(t, json.Unmarshal(raw, &read))
		require.Len(t, read.Contents, 1, era)
		validates(t, resourceMeta, read.Contents[0].Meta["ui"], era+": resources/read")
	}
}
