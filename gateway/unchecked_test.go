package gateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// TestUncompilableSchemaServed: an upstream's tool whose input schema the
// gateway's server cannot compile (draft-04 here) does not make Mount
// fail: it is listed with that schema, its calls reach the upstream
// unvalidated, and the gateway warns once.
func TestUncompilableSchemaServed(t *testing.T) {
	const draft04 = `{"type":"object","$schema":"http://json-schema.org/draft-04/schema#","properties":{"n":{"type":"integer"}}}`
	u := startUpstream(t, "old")
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "legacy", InputSchema: json.RawMessage(draft04), UncheckedArguments: true},
		func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("got " + string(req.Arguments)), nil
		}))
	var logs logBuffer
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{
		Upstreams: []gateway.Upstream{{Name: "old", URL: u.url}},
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = g.Close()
		_ = srv.Close()
	})
	c := mcptest.Connect(t, srv)
	var schema json.RawMessage
	for _, tool := range c.ListTools() {
		if tool.Name == "legacy" {
			schema = tool.InputSchema
		}
	}
	assert.JSONEq(t, draft04, string(schema), "listed as the upstream wrote it")
	assert.Equal(t, `got {"n":"seven"}`, c.CallTool("legacy", map[string]any{"n": "seven"}).Text(), "not validated by the gateway")
	assert.Equal(t, 1, strings.Count(logs.String(), "cannot be compiled"), logs.String())
	assert.Contains(t, logs.String(), "tool=legacy")
}

// logBuffer is a strings.Builder safe for concurrent writes.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestCyclicSchemaServedUnchecked: an upstream's tool whose input schema
// has a cycle that validation would never leave (the server refuses it,
// where jsonschema-go alone overflowed the stack on the first call) is
// served unchecked by default: a thousand calls reach the upstream and the
// gateway lives on. With DropUncheckedTools it is not served at all.
func TestCyclicSchemaServedUnchecked(t *testing.T) {
	const cyclic = `{"type":"object","properties":{"x":{"$ref":"#/properties/x"}},"required":["x"]}`
	const rootCycle = `{"type":"object","allOf":[{"$ref":"#"}]}`
	for _, drop := range []bool{false, true} {
		u := startUpstream(t, "up")
		for name, schema := range map[string]string{"loop": cyclic, "root": rootCycle} {
			require.NoError(t, u.srv.AddTool(server.Tool{Name: name, InputSchema: json.RawMessage(schema), UncheckedArguments: true},
				func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
					return server.Text("got " + string(req.Arguments)), nil
				}))
		}
		var logs logBuffer
		srv := server.New()
		g, err := gateway.Mount(t.Context(), srv, gateway.Config{
			Upstreams:          []gateway.Upstream{{Name: "up", URL: u.url}},
			Logger:             slog.New(slog.NewTextHandler(&logs, nil)),
			DropUncheckedTools: drop,
		})
		require.NoError(t, err)
		c := mcptest.Connect(t, srv)
		listed := map[string]bool{}
		for _, tool := range c.ListTools() {
			listed[tool.Name] = true
		}
		assert.Equal(t, 2, strings.Count(logs.String(), "validation would never end"), logs.String())
		if drop {
			assert.False(t, listed["loop"] || listed["root"], "dropped: %v", listed)
			assert.Contains(t, logs.String(), "is not served")
		} else {
			require.True(t, listed["loop"] && listed["root"], "served: %v", listed)
			for i := range 1000 {
				name := []string{"loop", "root"}[i%2]
				assert.Equal(t, `got {"x":1}`, c.CallTool(name, map[string]any{"x": 1}).Text())
			}
		}
		require.NoError(t, g.Close())
		require.NoError(t, srv.Close())
	}
}
