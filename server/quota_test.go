package server_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A caller holds at most WithTaskQuota tasks: its own finished ones make
// room, running ones do not, and another caller is not affected.
func TestTaskQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The caller is the tool name's first letter: "a" or "b".
		key := func(req *server.Request) string { return req.Name[:1] }
		h := newHarness(t, server.WithMaxTasks(10), server.WithTaskQuota(2, key))
		g := newGate()
		for _, name := range []string{"a-slow", "b-slow"} {
			require.NoError(t, h.srv.AddTool(taskTool(name, server.TaskSupportOptional), g.handler("done")))
		}
		require.NoError(t, h.srv.AddTool(taskTool("a-quick", server.TaskSupportOptional),
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text("quick"), nil
			}))
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		task := map[string]any{}

		h.Request(2, "tools/call", map[string]any{"name": "a-quick", "task": task})
		created, _ := h.resultOf(2)
		quickID := decodeTask(t, created).Task.TaskID
		h.Recv() // its completion
		h.Request(3, "tools/call", map[string]any{"name": "a-slow", "task": task})
		h.resultOf(3)
		<-g.started
		h.Request(4, "tools/call", map[string]any{"name": "a-slow", "task": task})
		h.resultOf(4)
		<-g.started
		h.Request(5, "tasks/get", map[string]any{"taskId": quickID})
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.errorOf(5).Code, "the caller's own finished task made room")

		h.Request(6, "tools/call", map[string]any{"name": "a-slow", "task": task})
		refused := h.errorOf(6)
		assert.Equal(t, int64(protocol.CodeServerBusy), refused.Code)
		assert.JSONEq(t, `{"quota":"tasks","retryAfterSeconds":10}`, string(refused.Data))

		h.Request(7, "tools/call", map[string]any{"name": "b-slow", "task": task})
		h.resultOf(7)
		<-g.started

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// QuotaRefusal answers -32000 with the quota and whole seconds in its
// data, and unwraps to the QuotaError telemetry counts.
func TestQuotaRefusal(t *testing.T) {
	for _, tc := range []struct {
		q     protocol.Quota
		after time.Duration
		data  string
	}{
		{protocol.QuotaToolShare, 0, `{"quota":"tool_share","retryAfterSeconds":1}`},
		{protocol.QuotaTasks, 1500 * time.Millisecond, `{"quota":"tasks","retryAfterSeconds":2}`},
		{protocol.QuotaInFlight, 3 * time.Second, `{"quota":"in_flight","retryAfterSeconds":3}`},
	} {
		e := server.QuotaRefusal(tc.q, tc.after)
		assert.Equal(t, protocol.CodeServerBusy, e.Code)
		assert.JSONEq(t, tc.data, string(e.Data))
		var qe *server.QuotaError
		require.ErrorAs(t, e, &qe)
		assert.Equal(t, tc.q, qe.Quota)
		assert.Equal(t, "quota exceeded: "+tc.q.String(), e.Message)
	}
}
