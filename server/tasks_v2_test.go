package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// extCaps returns client capabilities that declare the tasks extension,
// plus more.
func extCaps(more map[string]any) map[string]any {
	caps := map[string]any{"extensions": map[string]any{server.ExtensionTasks: map[string]any{}}}
	maps.Copy(caps, more)
	return caps
}

// v2 sends a stateless request with caps.
func (h *harness) v2(id int64, method string, caps map[string]any, params map[string]any) {
	p := map[string]any{"_meta": meta2026(caps)}
	maps.Copy(p, params)
	h.Request(id, method, p)
}

func keysOf(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

const serverInfoMeta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"vigil","version":"dev"}}`

// The extension is declared in server/discover, not as capabilities.tasks;
// initialize (2025) declares the tasks capability instead.
func TestTaskV2Discover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional), newGate().handler("done")))
		h.start()
		h.v2(1, "server/discover", nil, nil)
		var d struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		require.NoError(t, json.Unmarshal(h.RecvResult(1), &d))
		assert.JSONEq(t, `{"tools":{"listChanged":true},"logging":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`, string(d.Capabilities))
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A task of the extension: a flat CreateTaskResult, tasks/get with the
// result inline once done, an idempotent empty cancel ack.
func TestTaskV2Lifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		g := newGate()
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional), g.handler("computed")))
		h.start()
		caps := extCaps(nil)

		// A legacy task hint is tolerated and changes nothing.
		h.v2(1, "tools/call", caps, map[string]any{"name": "slow", "arguments": map[string]any{"seconds": 2}, "task": map[string]any{"ttl": 5, "pollInterval": 1}})
		created := h.RecvResult(1)
		id := decodeTask(t, created).TaskID
		require.Len(t, id, 26)
		assert.JSONEq(t, fmt.Sprintf(`{"resultType":"task","taskId":%q,"status":"working","createdAt":%q,"lastUpdatedAt":%q,"ttlMs":3600000,"pollIntervalMs":1000,%s}`,
			id, bubbleStart, bubbleStart, serverInfoMeta), string(created))
		<-g.started

		h.v2(2, "tasks/get", caps, map[string]any{"taskId": id})
		assert.JSONEq(t, fmt.Sprintf(`{"resultType":"complete","taskId":%q,"status":"working","createdAt":%q,"lastUpdatedAt":%q,"ttlMs":3600000,"pollIntervalMs":1000,%s}`,
			id, bubbleStart, bubbleStart, serverInfoMeta), string(h.RecvResult(2)))

		close(g.release)
		synctest.Wait()
		h.v2(3, "tasks/get", caps, map[string]any{"taskId": id})
		assert.JSONEq(t, fmt.Sprintf(`{"resultType":"complete","taskId":%q,"status":"completed","createdAt":%q,"lastUpdatedAt":%q,"ttlMs":3600000,"pollIntervalMs":1000,"result":{"resultType":"complete","content":[{"type":"text","text":"computed"}]},%s}`,
			id, bubbleStart, bubbleStart, serverInfoMeta), string(h.RecvResult(3)))

		for i := range 2 {
			id4 := int64(4 + i)
			h.v2(id4, "tasks/cancel", caps, map[string]any{"taskId": id})
			assert.JSONEq(t, `{"resultType":"complete",`+serverInfoMeta+`}`, string(h.RecvResult(id4)), "terminal: the same ack, every time")
		}
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
		require.NoError(t, h.srv.Close())
	})
}

// What a 2026-07-28 request gets without the extension, or with a bad
// task request.
func TestTaskV2Gating(t *testing.T) {
	missing := fmt.Sprintf(`{"requiredCapabilities":{"extensions":{%q:{}}}}`, server.ExtensionTasks)
	tests := []struct {
		name   string
		method string
		caps   map[string]any
		params map[string]any
		code   protocol.Code
		data   string
	}{
		{"tasks/get without the extension", "tasks/get", nil, map[string]any{"taskId": "gate-test"}, protocol.CodeMissingRequiredClientCapability, missing},
		{"tasks/update without the extension", "tasks/update", nil, map[string]any{"taskId": "gate-test", "inputResponses": map[string]any{}}, protocol.CodeMissingRequiredClientCapability, missing},
		{"tasks/cancel without the extension", "tasks/cancel", map[string]any{"elicitation": map[string]any{}}, map[string]any{"taskId": "gate-test"}, protocol.CodeMissingRequiredClientCapability, missing},
		{"required tool without the extension", "tools/call", nil, map[string]any{"name": "required"}, protocol.CodeMissingRequiredClientCapability, missing},
		{"tasks/result is gone", "tasks/result", extCaps(nil), map[string]any{"taskId": "x"}, protocol.CodeMethodNotFound, ""},
		{"tasks/list is gone", "tasks/list", extCaps(nil), nil, protocol.CodeMethodNotFound, ""},
		{"unknown task", "tasks/get", extCaps(nil), map[string]any{"taskId": "tasks-conformance-nonexistent-12345"}, protocol.CodeInvalidParams, ""},
		{"unknown task to cancel", "tasks/cancel", extCaps(nil), map[string]any{"taskId": "nope"}, protocol.CodeInvalidParams, ""},
		{"unknown task to update", "tasks/update", extCaps(nil), map[string]any{"taskId": "nope"}, protocol.CodeInvalidParams, ""},
		{"inputResponses not an object", "tasks/update", extCaps(nil), map[string]any{"taskId": "nope", "inputResponses": []int{1}}, protocol.CodeInvalidParams, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				taskTools(h)
				h.start()
				h.v2(1, tt.method, tt.caps, tt.params)
				e := h.errorOf(1)
				assert.Equal(t, int64(tt.code), e.Code)
				if tt.data != "" {
					assert.JSONEq(t, tt.data, string(e.Data))
				}
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

// Tools with task support run synchronously for a client without the
// extension, and tools without it always do.
func TestTaskV2Synchronous(t *testing.T) {
	tests := []struct {
		name   string
		tool   string
		caps   map[string]any
		params map[string]any
		want   string
	}{
		{"optional tool, no extension", "optional", nil, nil, `{"resultType":"complete","content":[{"type":"text","text":"ran"}],` + serverInfoMeta + `}`},
		{"plain tool, extension", "plain", extCaps(nil), nil, `{"resultType":"complete","content":[{"type":"text","text":"plain"}],` + serverInfoMeta + `}`},
		{"plain tool, legacy hint", "plain", extCaps(nil), map[string]any{"task": map[string]any{"ttl": 60000, "pollInterval": 100}}, `{"resultType":"complete","content":[{"type":"text","text":"plain"}],` + serverInfoMeta + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				require.NoError(t, h.srv.AddTool(taskTool("optional", server.TaskSupportOptional),
					func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
						assert.Empty(t, server.TaskIDFromContext(ctx))
						return server.Text("ran"), nil
					}))
				h.addTool("plain", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
					return server.Text("plain"), nil
				})
				h.start()
				params := map[string]any{"name": tt.tool}
				maps.Copy(params, tt.params)
				h.v2(1, "tools/call", tt.caps, params)
				assert.JSONEq(t, tt.want, string(h.RecvResult(1)))
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

// A tool error completes the task with isError; a protocol error or a
// panic fails it with the error inline and no result.
func TestTaskV2Outcomes(t *testing.T) {
	tests := []struct {
		name    string
		handler server.ToolHandler
		status  string
		result  string
		err     string
	}{
		{
			"tool error",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return nil, errors.New("job failed")
			},
			"completed", `{"resultType":"complete","content":[{"type":"text","text":"job failed"}],"isError":true}`, "",
		},
		{
			"protocol error",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return nil, &server.Error{Code: protocol.CodeInternal, Message: "backend unavailable", Data: json.RawMessage(`{"retry":true}`)}
			},
			"failed", "", `{"code":-32603,"message":"backend unavailable","data":{"retry":true}}`,
		},
		{
			"panic",
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) { panic("boom") },
			"failed", "", `{"code":-32603,"message":"internal error"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				require.NoError(t, h.srv.AddTool(taskTool("job", server.TaskSupportRequired), tt.handler))
				h.start()
				h.v2(1, "tools/call", extCaps(nil), map[string]any{"name": "job"})
				id := decodeTask(t, h.RecvResult(1)).TaskID
				synctest.Wait()
				h.v2(2, "tasks/get", extCaps(nil), map[string]any{"taskId": id})
				got := decodeTask(t, h.RecvResult(2))
				assert.Equal(t, tt.status, got.Status)
				if tt.result == "" {
					assert.Nil(t, got.Result)
				} else {
					assert.JSONEq(t, tt.result, string(got.Result))
				}
				if tt.err == "" {
					assert.Nil(t, got.Error)
				} else {
					raw, err := json.Marshal(got.Error)
					require.NoError(t, err)
					assert.JSONEq(t, tt.err, string(raw))
				}
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
				require.NoError(t, h.srv.Close())
			})
		})
	}
}

// tasks/cancel acknowledges at once; the task is cancelled before the
// ack, and its handler sees ErrClientCancel.
func TestTaskV2Cancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		g := newGate()
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional), g.handler("done")))
		h.start()
		caps := extCaps(nil)
		h.v2(1, "tools/call", caps, map[string]any{"name": "slow"})
		id := decodeTask(t, h.RecvResult(1)).TaskID
		<-g.started
		h.v2(2, "tasks/cancel", caps, map[string]any{"taskId": id})
		assert.JSONEq(t, `{"resultType":"complete",`+serverInfoMeta+`}`, string(h.RecvResult(2)))
		h.v2(3, "tasks/get", caps, map[string]any{"taskId": id})
		got := decodeTask(t, h.RecvResult(3))
		assert.Equal(t, "cancelled", got.Status)
		assert.Nil(t, got.Result)
		assert.Nil(t, got.Error)
		cause := <-g.causes
		require.ErrorIs(t, cause, server.ErrClientCancel)
		assert.Contains(t, cause.Error(), "tasks/cancel")
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
		require.NoError(t, h.srv.Close())
	})
}

// confirmTool asks one question (key "confirm") and completes with the
// answer.
func confirmTool(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	res, err := server.Elicit(server.ContextWithInputKey(ctx, "confirm"), &server.ElicitParams{
		Message:         "Delete it?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`),
	})
	if err != nil {
		return nil, err
	}
	return server.Text(fmt.Sprintf("%s: confirm=%v", res.Action, res.Content["confirm"])), nil
}

// pairTool asks two questions at once, with derived keys.
func pairTool(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	var wg sync.WaitGroup
	answers := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			var answer struct {
				Content map[string]any `json:"content"`
			}
			errs[i] = server.CallClient(ctx, "elicitation/create", map[string]any{"message": fmt.Sprintf("question %d", i)}, &answer)
			answers[i] = fmt.Sprint(answer.Content["name"])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.Sort(answers)
	return server.Text(fmt.Sprint(answers)), nil
}

// A task that needs input is input_required, lists its questions in
// tasks/get, and goes on when tasks/update brings the answers, all at once
// or one at a time.
func TestTaskV2Input(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		require.NoError(t, h.srv.AddTool(taskTool("confirm", server.TaskSupportOptional), confirmTool))
		require.NoError(t, h.srv.AddTool(taskTool("pair", server.TaskSupportOptional), pairTool))
		h.start()
		caps := extCaps(map[string]any{"elicitation": map[string]any{}})
		get := func(id int64, task string) wireTask {
			h.v2(id, "tasks/get", caps, map[string]any{"taskId": task})
			raw := h.RecvResult(id)
			assert.NotContains(t, string(raw), "requestState")
			return decodeTask(t, raw)
		}

		h.v2(1, "tools/call", caps, map[string]any{"name": "confirm", "arguments": map[string]any{"filename": "a.txt"}})
		one := decodeTask(t, h.RecvResult(1)).TaskID
		synctest.Wait()
		got := get(2, one)
		assert.Equal(t, "input_required", got.Status)
		require.Len(t, got.InputRequests, 1)
		assert.JSONEq(t, `{"method":"elicitation/create","params":{"message":"Delete it?","requestedSchema":{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}}}`,
			string(got.InputRequests["confirm"]))
		h.v2(3, "tasks/update", caps, map[string]any{"taskId": one, "inputResponses": map[string]any{
			"confirm":     map[string]any{"action": "accept", "content": map[string]any{"confirm": true}},
			"unknown-key": map[string]any{"ignored": true},
		}})
		assert.JSONEq(t, `{"resultType":"complete",`+serverInfoMeta+`}`, string(h.RecvResult(3)))
		synctest.Wait()
		got = get(4, one)
		assert.Equal(t, "completed", got.Status)
		assert.JSONEq(t, `{"resultType":"complete","content":[{"type":"text","text":"accept: confirm=true"}]}`, string(got.Result))
		assert.Nil(t, got.InputRequests)

		h.v2(5, "tools/call", caps, map[string]any{"name": "pair"})
		two := decodeTask(t, h.RecvResult(5)).TaskID
		synctest.Wait()
		got = get(6, two)
		assert.Equal(t, "input_required", got.Status)
		require.Equal(t, []string{"elicitation-create-0", "elicitation-create-1"}, slices.Sorted(maps.Keys(got.InputRequests)))
		h.v2(7, "tasks/update", caps, map[string]any{"taskId": two, "inputResponses": map[string]any{
			"elicitation-create-0": map[string]any{"action": "accept", "content": map[string]any{"name": "partial-1", "confirm": true}},
		}})
		h.RecvResult(7)
		synctest.Wait()
		got = get(8, two)
		assert.Equal(t, "input_required", got.Status, "one answer is still missing")
		assert.Equal(t, []string{"elicitation-create-1"}, slices.Sorted(maps.Keys(got.InputRequests)))
		h.v2(9, "tasks/update", caps, map[string]any{"taskId": two, "inputResponses": map[string]any{
			"elicitation-create-1": map[string]any{"action": "accept", "content": map[string]any{"name": "partial-2"}},
		}})
		h.RecvResult(9)
		synctest.Wait()
		got = get(10, two)
		assert.Equal(t, "completed", got.Status)
		assert.JSONEq(t, `{"resultType":"complete","content":[{"type":"text","text":"[partial-1 partial-2]"}]}`, string(got.Result))

		// A task whose client lacks the capability fails with -32021.
		h.v2(11, "tools/call", extCaps(nil), map[string]any{"name": "pair"})
		three := decodeTask(t, h.RecvResult(11)).TaskID
		synctest.Wait()
		got = get(12, three)
		assert.Equal(t, "failed", got.Status)
		require.NotNil(t, got.Error)
		assert.Equal(t, int64(protocol.CodeMissingRequiredClientCapability), got.Error.Code)

		// Canceling a task that waits for input ends the wait.
		h.v2(13, "tools/call", caps, map[string]any{"name": "confirm"})
		four := decodeTask(t, h.RecvResult(13)).TaskID
		synctest.Wait()
		h.v2(14, "tasks/cancel", caps, map[string]any{"taskId": four})
		h.RecvResult(14)
		synctest.Wait()
		got = get(15, four)
		assert.Equal(t, "cancelled", got.Status)
		assert.Nil(t, got.InputRequests)

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
		require.NoError(t, h.srv.Close())
	})
}

// withTaskTool gathers a name by an input_required round, then continues
// as a task (Deferred + RunAsTask).
func withTaskTool(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	res, err := server.Elicit(server.ContextWithInputKey(ctx, "user_name"), &server.ElicitParams{
		Message:         "What is your name?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
	})
	if err != nil {
		return nil, err
	}
	return server.RunAsTask(ctx, func(ctx context.Context) (*server.CallToolResult, error) {
		return server.Text(fmt.Sprintf("Hello, %v! (task %t)", res.Content["name"], server.TaskIDFromContext(ctx) != "")), nil
	})
}

// MRTR, then a task: round 1 asks for input without creating a task, the
// retry with the answer becomes one.
func TestTaskV2AfterInputRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		tool := taskTool("test_tool_with_task", server.TaskSupportRequired)
		tool.Execution.Deferred = true
		require.NoError(t, h.srv.AddTool(tool, withTaskTool))
		optional := taskTool("optional_with_task", server.TaskSupportOptional)
		optional.Execution.Deferred = true
		require.NoError(t, h.srv.AddTool(optional, withTaskTool))
		h.start()
		caps := extCaps(map[string]any{"elicitation": map[string]any{}})

		h.v2(1, "tools/call", caps, map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{}})
		round1 := h.RecvResult(1)
		assert.Equal(t, []string{"_meta", "inputRequests", "requestState", "resultType"}, keysOf(round1), "no taskId in round 1")
		r1 := decodeResult(t, round1)
		require.Equal(t, "input_required", r1.ResultType)
		require.Contains(t, r1.InputRequests, "user_name")

		h.v2(2, "tools/call", caps, map[string]any{
			"name": "test_tool_with_task", "arguments": map[string]any{}, "requestState": r1.RequestState,
			"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}},
		})
		round2 := h.RecvResult(2)
		created := decodeTask(t, round2)
		assert.Equal(t, "task", created.ResultType)
		assert.NotContains(t, keysOf(round2), "requestState")
		assert.NotContains(t, keysOf(round2), "inputRequests")
		synctest.Wait()
		h.v2(3, "tasks/get", caps, map[string]any{"taskId": created.TaskID})
		got := decodeTask(t, h.RecvResult(3))
		assert.Equal(t, "completed", got.Status)
		assert.JSONEq(t, `{"resultType":"complete","content":[{"type":"text","text":"Hello, Alice! (task true)"}]}`, string(got.Result))

		// Without the extension the same handler completes synchronously
		// (optional), and RunAsTask runs in line.
		h.v2(4, "tools/call", map[string]any{"elicitation": map[string]any{}}, map[string]any{
			"name":           "optional_with_task",
			"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Bob"}}},
		})
		assert.Equal(t, "Hello, Bob! (task false)", decodeResult(t, h.RecvResult(4)).Content[0].Text)

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
		require.NoError(t, h.srv.Close())
	})
}

// A handler that calls RunAsTask but drops its answer (or panics) gets no
// task: the call ends with what the handler did, and Close does not wait
// for a task that never started.
func TestTaskV2RunAsTaskIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		tool := taskTool("sloppy", server.TaskSupportOptional)
		tool.Execution.Deferred = true
		ran := make(chan struct{}, 1)
		require.NoError(t, h.srv.AddTool(tool, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			_, _ = server.RunAsTask(ctx, func(context.Context) (*server.CallToolResult, error) {
				ran <- struct{}{}
				return server.Text("background"), nil
			})
			return server.Text("foreground"), nil
		}))
		panicky := taskTool("panicky", server.TaskSupportOptional)
		panicky.Execution.Deferred = true
		require.NoError(t, h.srv.AddTool(panicky, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			_, _ = server.RunAsTask(ctx, func(context.Context) (*server.CallToolResult, error) {
				ran <- struct{}{}
				return server.Text("background"), nil
			})
			panic("after RunAsTask")
		}))
		h.start()
		h.v2(1, "tools/call", extCaps(nil), map[string]any{"name": "sloppy"})
		assert.Equal(t, "foreground", decodeResult(t, h.RecvResult(1)).Content[0].Text)
		h.v2(2, "tools/call", extCaps(nil), map[string]any{"name": "panicky"})
		assert.Equal(t, int64(protocol.CodeInternal), h.errorOf(2).Code)
		synctest.Wait()
		assert.Empty(t, ran, "no task ever started")
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
		require.NoError(t, h.srv.Close())
	})
}
