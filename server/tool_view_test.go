package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestSetToolView: a tool the view hides from a request is neither listed
// nor callable for it (as an unknown tool), and shown again once the view
// is removed; tools are listed in the order registered.
func TestSetToolView(t *testing.T) {
	srv := server.New()
	t.Cleanup(func() { _ = srv.Close() })
	for _, name := range []string{"zeta", "alpha", "hidden"} {
		require.NoError(t, srv.AddTool(server.Tool{Name: name}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(name), nil
		}))
	}
	srv.SetToolView(func(req *server.Request, tool *server.Tool) bool {
		return tool.Name != "hidden" || req.ClientCapabilities.Roots != nil
	})
	names := func(c *mcptest.Client) []string {
		var out []string
		for _, tl := range c.ListTools() {
			out = append(out, tl.Name)
		}
		return out
	}
	plain := mcptest.Connect(t, srv)
	assert.Equal(t, []string{"zeta", "alpha"}, names(plain))
	_, rpcErr := plain.Call("tools/call", map[string]any{"name": "hidden", "arguments": map[string]any{}})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code)
	rooted := mcptest.Connect(t, srv, mcptest.WithCapabilities(map[string]any{"roots": map[string]any{}}))
	assert.Equal(t, []string{"zeta", "alpha", "hidden"}, names(rooted))

	srv.SetToolView(nil)
	assert.Equal(t, []string{"zeta", "alpha", "hidden"}, names(plain))
	assert.Equal(t, "hidden", plain.CallTool("hidden", nil).Text())
}
