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
