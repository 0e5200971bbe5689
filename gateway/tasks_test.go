package gateway_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
)

// TestTaskAcrossTheHop: an upstream tool that runs only as a task is
// listed with its taskSupport, refused as a plain call, and called as a
// task of the gateway's server: the gateway runs the upstream's own task
// and the caller's tasks/result gets its result.
func TestTaskAcrossTheHop(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "job", Description: "a task", Execution: &server.ToolExecution{TaskSupport: server.TaskSupportRequired}},
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("job done"), nil
		}))
	c := front(t, gateway.Upstream{Name: "a", URL: u.url})
	listed, rpcErr := c.Call("tools/list", nil)
	require.Nil(t, rpcErr)
	assert.Contains(t, string(listed), `"name":"job","description":"a task","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}`)

	_, rpcErr = c.Call("tools/call", map[string]any{"name": "job"})
	require.NotNil(t, rpcErr, "a plain call of a task-only tool is refused")

	raw, rpcErr := c.Call("tools/call", map[string]any{"name": "job", "task": map[string]any{}})
	require.Nil(t, rpcErr)
	var created struct{ Task struct{ TaskID string } }
	require.NoError(t, json.Unmarshal(raw, &created))
	require.NotEmpty(t, created.Task.TaskID)
	raw, rpcErr = c.Call("tasks/result", map[string]string{"taskId": created.Task.TaskID})
	require.Nil(t, rpcErr)
	assert.Contains(t, string(raw), "job done")
}
