package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Test identities travel in _meta: "test/caller" is the caller key,
// "test/scopes" the scopes the tool access check grants.
const (
	metaCaller = "test/caller"
	metaScopes = "test/scopes"
)

func metaString(req *server.Request, key string) string {
	var s string
	raw, _ := req.Meta.Get(key)
	_ = json.Unmarshal(raw, &s)
	return s
}

// callerFromMeta is a WithCallerKey key: the test/caller _meta string.
func callerFromMeta(req *server.Request) string { return metaString(req, metaCaller) }

// scopesFromMeta is a WithToolAccess check: the tool's scopes must all be
// among the space-separated test/scopes _meta.
func scopesFromMeta(req *server.Request, t *server.Tool) bool {
	held := strings.Fields(metaString(req, metaScopes))
	for _, need := range t.Scopes {
		if !slices.Contains(held, need) {
			return false
		}
	}
	return true
}

// v2as sends a stateless request with the extension declared, as caller
// holding scopes.
func (h *harness) v2as(id int64, method, caller, scopes string, params map[string]any) {
	meta := meta2026(extCaps(nil))
	meta[metaCaller], meta[metaScopes] = caller, scopes
	p := map[string]any{"_meta": meta}
	maps.Copy(p, params)
	h.Request(id, method, p)
}

// as1 sends a 2025 session request as caller holding scopes.
func (h *harness) as1(id int64, method, caller, scopes string, params map[string]any) {
	p := map[string]any{"_meta": map[string]any{metaCaller: caller, metaScopes: scopes}}
	maps.Copy(p, params)
	h.Request(id, method, p)
}

// requireUnknownTask checks that the answer to id is exactly the answer to
// a task that does not exist.
func requireUnknownTask(t *testing.T, h *harness, id int64, method, taskID string) {
	t.Helper()
	e := h.errorOf(id)
	assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code, method)
	assert.Equal(t, fmt.Sprintf("%s: unknown task %q (it may have expired)", method, taskID), e.Message, method)
	assert.Empty(t, e.Data, method)
}

// With WithCallerKey, a 2026-07-28 task (which belongs to no session)
// answers only the caller that created it: to any other key, anonymous
// included, every tasks/* method answers as for an unknown task, and the
// task's result and state are untouched.
func TestTaskV2CallerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithCallerKey(callerFromMeta))
		g := newGate()
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional), g.handler("bob's secret")))
		h.start()

		h.v2as(1, "tools/call", "bob", "", map[string]any{"name": "slow"})
		id := decodeTask(t, h.RecvResult(1)).TaskID
		<-g.started

		n := int64(10)
		for _, caller := range []string{"alice", ""} {
			for _, m := range []struct {
				method string
				params map[string]any
			}{
				{"tasks/get", map[string]any{"taskId": id}},
				{"tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{}}},
				{"tasks/cancel", map[string]any{"taskId": id}},
			} {
				n++
				h.v2as(n, m.method, caller, "", m.params)
				requireUnknownTask(t, h, n, m.method, id)
			}
		}

		close(g.release)
		synctest.Wait()
		h.v2as(30, "tasks/get", "alice", "", map[string]any{"taskId": id})
		requireUnknownTask(t, h, 30, "tasks/get", id)
		h.v2as(31, "tasks/get", "bob", "", map[string]any{"taskId": id})
		got := decodeTask(t, h.RecvResult(31))
		assert.Equal(t, "completed", got.Status, "alice's cancel did not reach the task")
		assert.Contains(t, string(got.Result), "bob's secret")

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
		require.NoError(t, h.srv.Close())
	})
}

// In a 2025 session, a task stays the session's (another session gets an
// unknown task, with or without the same caller key) and, with
// WithCallerKey, its caller's: another key in the same session gets an
// unknown task, and tasks/list lists only the caller's tasks.
func TestTaskV1CallerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithCallerKey(callerFromMeta))
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional),
			func(_ context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text("bob's secret"), nil
			}))
		toolsStart(h)
		h.as1(2, "tools/call", "bob", "", map[string]any{"name": "slow", "task": map[string]any{}})
		created, _ := h.resultOf(2)
		id := decodeTask(t, created).Task.TaskID
		synctest.Wait()

		n := int64(10)
		for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			n++
			h.as1(n, method, "alice", "", map[string]any{"taskId": id})
			requireUnknownTask(t, h, n, method, id)
		}
		h.as1(20, "tasks/list", "alice", "", nil)
		list, _ := h.resultOf(20)
		assert.JSONEq(t, `{"tasks":[]}`, string(list))

		h.as1(21, "tasks/list", "bob", "", nil)
		list, _ = h.resultOf(21)
		assert.Contains(t, string(list), id)
		h.as1(22, "tasks/result", "bob", "", map[string]any{"taskId": id})
		result, _ := h.resultOf(22)
		text, _ := toolText(t, result)
		assert.Equal(t, "bob's secret", text)

		// Another session, same caller key: still not its task.
		h2 := h.second()
		h2.Initialize(protocol.Version20251125, nil)
		h2.as1(2, "tasks/get", "bob", "", map[string]any{"taskId": id})
		requireUnknownTask(t, h2, 2, "tasks/get", id)
		require.NoError(t, h2.Close())
		require.NoError(t, h2.Wait())
		toolsStop(h)
	})
}

// With WithToolAccess, reading or feeding a task checks the caller's access
// to the task's tool again: the same caller, with a token that lacks the
// tool's scopes, gets an unknown task from tasks/get, tasks/result and
// tasks/update, and tasks/list leaves the task out; tasks/cancel still
// stops it.
func TestTaskToolAccessRecheck(t *testing.T) {
	t.Run("2026-07-28", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, server.WithCallerKey(callerFromMeta), server.WithToolAccess(scopesFromMeta))
			g := newGate()
			tool := taskTool("deploy", server.TaskSupportOptional)
			tool.Scopes = []string{"deploy"}
			require.NoError(t, h.srv.AddTool(tool, g.handler("deployed")))
			h.start()

			h.v2as(1, "tools/call", "bob", "mcp", map[string]any{"name": "deploy"})
			requireUnknownToolError(t, h, 1)
			h.v2as(2, "tools/call", "bob", "mcp deploy", map[string]any{"name": "deploy"})
			id := decodeTask(t, h.RecvResult(2)).TaskID
			<-g.started
			close(g.release)
			synctest.Wait()

			h.v2as(3, "tasks/get", "bob", "mcp", map[string]any{"taskId": id})
			requireUnknownTask(t, h, 3, "tasks/get", id)
			h.v2as(4, "tasks/update", "bob", "mcp", map[string]any{"taskId": id, "inputResponses": map[string]any{}})
			requireUnknownTask(t, h, 4, "tasks/update", id)
			h.v2as(5, "tasks/get", "bob", "deploy mcp", map[string]any{"taskId": id})
			assert.Contains(t, string(decodeTask(t, h.RecvResult(5)).Result), "deployed")
			h.v2as(6, "tasks/cancel", "bob", "mcp", map[string]any{"taskId": id})
			h.RecvResult(6)

			require.NoError(t, h.Close())
			require.NoError(t, h.Wait())
			require.NoError(t, h.srv.Close())
		})
	})
	t.Run("2025-11-25", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := newHarness(t, server.WithToolAccess(scopesFromMeta)) // no caller key: the session alone binds
			tool := taskTool("deploy", server.TaskSupportOptional)
			tool.Scopes = []string{"deploy"}
			require.NoError(t, h.srv.AddTool(tool, func(_ context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text("deployed"), nil
			}))
			toolsStart(h)
			h.as1(2, "tools/call", "", "deploy", map[string]any{"name": "deploy", "task": map[string]any{}})
			created, _ := h.resultOf(2)
			id := decodeTask(t, created).Task.TaskID
			synctest.Wait()

			h.as1(3, "tasks/result", "", "mcp", map[string]any{"taskId": id})
			requireUnknownTask(t, h, 3, "tasks/result", id)
			h.as1(4, "tasks/get", "", "", map[string]any{"taskId": id})
			requireUnknownTask(t, h, 4, "tasks/get", id)
			h.as1(5, "tasks/list", "", "mcp", nil)
			list, _ := h.resultOf(5)
			assert.JSONEq(t, `{"tasks":[]}`, string(list))
			h.as1(6, "tasks/result", "", "deploy", map[string]any{"taskId": id})
			result, _ := h.resultOf(6)
			text, _ := toolText(t, result)
			assert.Equal(t, "deployed", text)
			toolsStop(h)
		})
	})
}

// requireUnknownToolError checks that the answer to id refuses the tool as
// unknown.
func requireUnknownToolError(t *testing.T, h *harness, id int64) {
	t.Helper()
	e := h.errorOf(id)
	assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
	assert.Contains(t, e.Message, "unknown tool")
}
