package server_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// listRootsTool answers with the first root the client lists.
func listRootsTool(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	roots, err := server.ListRoots(ctx)
	if err != nil {
		return nil, err
	}
	if len(roots) == 0 {
		return server.Text("no roots"), nil
	}
	return server.Text(roots[0].URI), nil
}

// roots/list goes to the client with "params":{} in every form it takes:
// an input request of a 2026-07-28 round, a question of a 2026-07-28 task,
// and a server-to-client request in a 2025 session. The schema makes its
// params optional, but go-sdk v1.8.0 fails to decode an input request
// without them, and every other request sends some.
func TestRootsListSendsEmptyParams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		require.NoError(t, h.srv.AddTool(taskTool("roots", server.TaskSupportOptional), listRootsTool))
		h.start()
		roots := map[string]any{"roots": map[string]any{}}

		// A 2026-07-28 round: the wire bytes of its inputRequests.
		h.v2(1, "tools/call", roots, map[string]any{"name": "roots"})
		raw := string(h.RecvResult(1))
		assert.Contains(t, raw, `"inputRequests":{"roots-list-0":{"method":"roots/list","params":{}}}`)

		// A 2026-07-28 task's question, as tasks/get lists it.
		caps := extCaps(roots)
		h.v2(2, "tools/call", caps, map[string]any{"name": "roots"})
		id := decodeTask(t, h.RecvResult(2)).TaskID
		synctest.Wait()
		h.v2(3, "tasks/get", caps, map[string]any{"taskId": id})
		raw = string(h.RecvResult(3))
		assert.Contains(t, raw, `"roots-list-0":{"method":"roots/list","params":{}}`)
		h.v2(4, "tasks/cancel", caps, map[string]any{"taskId": id})
		h.RecvResult(4)

		// A 2025 session's server-to-client request.
		s := h.second()
		s.Initialize(protocol.Version20251125, roots)
		s.SendCallTool(5, "roots", nil)
		ask := s.RecvRequest()
		require.Equal(t, "roots/list", ask.Method)
		assert.JSONEq(t, `{}`, string(ask.Params))
		assert.Equal(t, "{}", string(ask.Params), "the bytes sent")
		s.Reply(ask, map[string]any{"roots": []map[string]any{{"uri": "file:///w"}}})
		text, _ := toolText(t, s.RecvResult(5))
		assert.Equal(t, "file:///w", text)
		s.finish()
		h.finish()
	})
}
