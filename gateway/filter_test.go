package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
)

// TestToolFilter: only the tools the patterns let through are listed and
// callable, and a list_changed refresh follows the filter.
func TestToolFilter(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	c := front(t, gateway.Upstream{Name: "a", URL: u.url, Tools: []string{"h*", "b*", "!bad"}})
	assert.ElementsMatch(t, []string{"hello", "block"}, toolNames(c))
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "bad"})
	require.NotNil(t, rpcErr, "a tool left out cannot be called")
	assert.Contains(t, rpcErr.Message, "bad")

	hi := func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hi"), nil
	}
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "hi"}, hi))
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "other"}, hi))
	for { // the refresh may announce other lists too
		n, ok := c.Recv().(*transport.Request)
		require.True(t, ok)
		if n.Method == "notifications/tools/list_changed" {
			break
		}
	}
	assert.ElementsMatch(t, []string{"hello", "block", "hi"}, toolNames(c), "the new tool the filter lets through, not the other")
}

// TestToolFilterRefused: a malformed pattern, or one that matches none of
// the upstream's tools, fails Mount with nothing registered.
func TestToolFilterRefused(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	srv := server.New()
	defer func() { _ = srv.Close() }()
	for _, tc := range []struct {
		tools   []string
		wantErr string
	}{
		{[]string{"hel[lo"}, `tool pattern "hel[lo"`},
		{[]string{"!"}, `tool pattern "!"`},
		{[]string{"hello", "nope*", "!zz"}, "tool patterns nope*, !zz match none of the upstream's tools"},
	} {
		_, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: u.url, Tools: tc.tools}}})
		require.ErrorContains(t, err, tc.wantErr)
	}
	assert.Empty(t, srv.ToolNames())
}
