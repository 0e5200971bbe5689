package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestToolWait: a call of a tool not registered waits for SetToolWait's
// function, and is then served by the tool registered meanwhile; its
// error answers the call as it is; a registered tool's call never waits;
// without a wait, or once the wait says nothing, a name unknown is
// answered as unknown.
func TestToolWait(t *testing.T) {
	testkit.Watchdog(t)
	srv := server.New()
	t.Cleanup(func() { _ = srv.Close() })
	text := func(s string) server.ToolHandler {
		return func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(s), nil
		}
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "here"}, text("here")))
	waiting, release := make(chan string, 4), make(chan error)
	srv.SetToolWait(func(_ context.Context, name string) error {
		waiting <- name
		return <-release
	})
	c := mcptest.Connect(t, srv)
	assert.Equal(t, "here", c.CallTool("here", nil).Text(), "a registered tool's call does not wait")

	c.SendCallTool(10, "late", nil)
	assert.Equal(t, "late", <-waiting)
	require.NoError(t, srv.AddTool(server.Tool{Name: "late"}, text("late")))
	release <- nil
	assert.Contains(t, string(c.RecvResult(10)), `"late"`)

	c.SendCallTool(11, "refused", nil)
	assert.Equal(t, "refused", <-waiting)
	release <- server.Errorf(protocol.CodeServerBusy, "not yet")
	e := c.RecvError(11)
	assert.Equal(t, int64(protocol.CodeServerBusy), e.Code)
	assert.Equal(t, "not yet", e.Message)

	c.SendCallTool(12, "never", nil)
	assert.Equal(t, "never", <-waiting)
	release <- nil
	assert.Equal(t, int64(protocol.CodeInvalidParams), c.RecvError(12).Code)

	srv.SetToolWait(nil)
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "never"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code)
}
