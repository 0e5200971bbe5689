package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// The time a synctest bubble starts at, as tasks show it.
const bubbleStart = "2000-01-01T00:00:00.000Z"

// wireTask holds the fields of a task in either wire format.
type wireTask struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage"`
	CreatedAt      string                     `json:"createdAt"`
	LastUpdatedAt  string                     `json:"lastUpdatedAt"`
	TTL            *int64                     `json:"ttl"`
	PollInterval   int64                      `json:"pollInterval"`
	TTLMs          *int64                     `json:"ttlMs"`
	PollIntervalMs int64                      `json:"pollIntervalMs"`
	Result         json.RawMessage            `json:"result"`
	Error          *transport.Error           `json:"error"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	Task           *wireTask                  `json:"task"`
}

func decodeTask(t *testing.T, raw json.RawMessage) wireTask {
	t.Helper()
	var w wireTask
	require.NoError(t, json.Unmarshal(raw, &w), "%s", raw)
	return w
}

// readUntil reads messages until the response to id, returning it and the
// messages from the server that came before it.
func (h *harness) readUntil(id int64) (*transport.Response, []*transport.Request) {
	var before []*transport.Request
	for {
		switch m := h.Recv().(type) {
		case *transport.Response:
			require.Equal(h.t, transport.Int64ID(id), m.ID, "unexpected response %s", m.Result)
			return m, before
		case *transport.Request:
			before = append(before, m)
		}
	}
}

// resultOf reads until the response to id and requires a result.
func (h *harness) resultOf(id int64) (json.RawMessage, []*transport.Request) {
	resp, before := h.readUntil(id)
	require.Nil(h.t, resp.Error, "want a result for %d, got %+v", id, resp.Error)
	return resp.Result, before
}

// errorOf reads until the response to id and requires an error.
func (h *harness) errorOf(id int64) *transport.Error {
	resp, _ := h.readUntil(id)
	require.NotNil(h.t, resp.Error, "want an error for %d, got %s", id, resp.Result)
	return resp.Error
}

func taskTool(name, support string) server.Tool {
	return server.Tool{Name: name, Description: name, Execution: &server.ToolExecution{TaskSupport: support}}
}

// gate is a tool handler that runs until release is closed or its context
// is done; causes receives the context's cause in the latter case.
type gate struct {
	started chan struct{}
	release chan struct{}
	causes  chan error
}

func newGate() *gate {
	return &gate{started: make(chan struct{}, 10), release: make(chan struct{}), causes: make(chan error, 10)}
}

func (g *gate) handler(text string) server.ToolHandler {
	return func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		g.started <- struct{}{}
		select {
		case <-g.release:
			return server.Text(text), nil
		case <-ctx.Done():
			g.causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}
	}
}

func statusNotes(t *testing.T, notes []*transport.Request) []string {
	var out []string
	for _, n := range notes {
		if n.Method == "notifications/tasks/status" {
			out = append(out, decodeTask(t, n.Params).Status)
		}
	}
	return out
}

// A 2025 task: created at once, polled, its progress and logs tagged with
// the task, its result read with tasks/result once it is done.
func TestTaskV1Lifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		release := make(chan struct{})
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional),
			func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				assert.NotEmpty(t, server.TaskIDFromContext(ctx))
				assert.NoError(t, server.ReportProgress(ctx, 1, 2, "half"))
				server.ClientLogger(ctx).Info("working")
				select {
				case <-release:
					return server.Text("done"), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}))
		h.start()
		h.Request(1, "initialize", map[string]any{"protocolVersion": protocol.Version20251125, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		var init struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		}
		require.NoError(t, json.Unmarshal(h.RecvResult(1), &init))
		assert.JSONEq(t, `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`, string(init.Capabilities["tasks"]))
		h.Notify("notifications/initialized", nil)

		h.Request(2, "tools/list", nil)
		assert.Contains(t, string(h.RecvResult(2)), `"execution":{"taskSupport":"optional"}`)

		h.Request(3, "tools/call", map[string]any{"name": "slow", "task": map[string]any{"ttl": 60000}, "_meta": map[string]any{"progressToken": "p1"}})
		created, before := h.resultOf(3)
		assert.Empty(t, before)
		id := decodeTask(t, created).Task.TaskID
		require.Len(t, id, 26, "128 random bits in base32")
		assert.JSONEq(t, fmt.Sprintf(`{"task":{"taskId":%q,"status":"working","createdAt":%q,"lastUpdatedAt":%q,"ttl":60000,"pollInterval":1000}}`,
			id, bubbleStart, bubbleStart), string(created))

		// The handler starts once the client has the task; its progress
		// (with the request's token) and logs carry the related-task _meta.
		related := fmt.Sprintf(`{%q:{"taskId":%q}}`, vocab.MetaRelatedTask, id)
		progress, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/progress", progress.Method)
		assert.JSONEq(t, `{"progressToken":"p1","progress":1,"total":2,"message":"half","_meta":`+related+`}`, string(progress.Params))
		logged, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/message", logged.Method)
		assert.JSONEq(t, `{"level":"info","data":{"message":"working"},"_meta":`+related+`}`, string(logged.Params))

		h.Request(4, "tasks/get", map[string]any{"taskId": id})
		got, _ := h.resultOf(4)
		assert.JSONEq(t, fmt.Sprintf(`{"taskId":%q,"status":"working","createdAt":%q,"lastUpdatedAt":%q,"ttl":60000,"pollInterval":1000}`,
			id, bubbleStart, bubbleStart), string(got))

		h.Request(5, "tasks/list", nil)
		listed, _ := h.resultOf(5)
		var list struct {
			Tasks      []wireTask `json:"tasks"`
			NextCursor string     `json:"nextCursor"`
		}
		require.NoError(t, json.Unmarshal(listed, &list))
		require.Len(t, list.Tasks, 1)
		assert.Equal(t, id, list.Tasks[0].TaskID)
		assert.Empty(t, list.NextCursor)

		// tasks/result blocks until the task is done.
		h.Request(6, "tasks/result", map[string]any{"taskId": id})
		synctest.Wait()
		time.Sleep(time.Second)
		close(release)
		result, notes := h.resultOf(6)
		assert.JSONEq(t, `{"content":[{"type":"text","text":"done"}],"_meta":`+related+`}`, string(result))
		require.Len(t, notes, 1)
		assert.Equal(t, "notifications/tasks/status", notes[0].Method)
		assert.JSONEq(t, fmt.Sprintf(`{"taskId":%q,"status":"completed","createdAt":%q,"lastUpdatedAt":"2000-01-01T00:00:01.000Z","ttl":60000,"pollInterval":1000}`,
			id, bubbleStart), string(notes[0].Params))

		h.Request(7, "tasks/get", map[string]any{"taskId": id})
		got, _ = h.resultOf(7)
		assert.Equal(t, "completed", decodeTask(t, got).Status)
		h.Request(8, "tasks/result", map[string]any{"taskId": id})
		again, _ := h.resultOf(8)
		assert.JSONEq(t, string(result), string(again), "the result stays available")
		h.Request(9, "tasks/cancel", map[string]any{"taskId": id})
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.errorOf(9).Code, "a terminal task cannot be cancelled")

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// taskTools registers tools of every kind of task support: "required"
// fails with a tool error, "optional" with a protocol error, "plain" works.
func taskTools(h *harness) {
	require.NoError(h.t, h.srv.AddTool(taskTool("required", server.TaskSupportRequired),
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return nil, errors.New("disk full")
		}))
	require.NoError(h.t, h.srv.AddTool(taskTool("optional", server.TaskSupportOptional),
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return nil, server.Errorf(protocol.CodeInvalidParams, "bad input")
		}))
	h.addTool("plain", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("plain"), nil
	})
}

// The errors of the 2025 task surface.
func TestTaskV1Errors(t *testing.T) {
	task := map[string]any{}
	tests := []struct {
		name   string
		method string
		params any
		code   protocol.Code
	}{
		{"required tool without a task", "tools/call", map[string]any{"name": "required"}, protocol.CodeMethodNotFound},
		{"forbidden tool as a task", "tools/call", map[string]any{"name": "plain", "task": task}, protocol.CodeMethodNotFound},
		{"task not an object", "tools/call", map[string]any{"name": "optional", "task": "soon"}, protocol.CodeInvalidParams},
		{"negative ttl", "tools/call", map[string]any{"name": "optional", "task": map[string]any{"ttl": -1}}, protocol.CodeInvalidParams},
		{"optional tool without a task runs as usual", "tools/call", map[string]any{"name": "optional"}, protocol.CodeInvalidParams},
		{"unknown task", "tasks/get", map[string]any{"taskId": "nope"}, protocol.CodeInvalidParams},
		{"no taskId", "tasks/get", map[string]any{}, protocol.CodeInvalidParams},
		{"taskId not a string", "tasks/get", map[string]any{"taskId": 7}, protocol.CodeInvalidParams},
		{"no params", "tasks/cancel", nil, protocol.CodeInvalidParams},
		{"unknown task result", "tasks/result", map[string]any{"taskId": "nope"}, protocol.CodeInvalidParams},
		{"bad cursor", "tasks/list", map[string]any{"cursor": "!"}, protocol.CodeInvalidParams},
		{"tasks/update is 2026-07-28 only", "tasks/update", map[string]any{"taskId": "nope"}, protocol.CodeMethodNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				taskTools(h)
				h.start()
				h.Initialize(protocol.Version20251125, nil)
				h.Request(2, tt.method, tt.params)
				assert.Equal(t, int64(tt.code), h.errorOf(2).Code)
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

// In 2025 a tool error fails the task, and so does a protocol error;
// tasks/result answers exactly as the tools/call would have. Another
// session sees none of these tasks.
func TestTaskV1Failures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		taskTools(h)
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		task := map[string]any{}

		h.Request(2, "tools/call", map[string]any{"name": "required", "task": task})
		created, _ := h.resultOf(2)
		failedID := decodeTask(t, created).Task.TaskID
		h.Request(3, "tasks/result", map[string]any{"taskId": failedID})
		result, notes := h.resultOf(3)
		assert.JSONEq(t, fmt.Sprintf(`{"content":[{"type":"text","text":"disk full"}],"isError":true,"_meta":{%q:{"taskId":%q}}}`, vocab.MetaRelatedTask, failedID), string(result))
		assert.Equal(t, []string{"failed"}, statusNotes(t, notes))
		h.Request(4, "tasks/get", map[string]any{"taskId": failedID})
		got, _ := h.resultOf(4)
		assert.Equal(t, "failed", decodeTask(t, got).Status)
		assert.Equal(t, "The tool reported an error.", decodeTask(t, got).StatusMessage)

		h.Request(5, "tools/call", map[string]any{"name": "optional", "task": task})
		created, _ = h.resultOf(5)
		protoID := decodeTask(t, created).Task.TaskID
		h.Request(6, "tasks/result", map[string]any{"taskId": protoID})
		e := h.errorOf(6)
		assert.Equal(t, int64(protocol.CodeInvalidParams), e.Code)
		assert.Equal(t, "bad input", e.Message)
		h.Request(7, "tasks/get", map[string]any{"taskId": protoID})
		got, _ = h.resultOf(7)
		assert.Equal(t, "failed", decodeTask(t, got).Status)
		assert.Equal(t, "The task failed: bad input", decodeTask(t, got).StatusMessage)

		h2 := h.second()
		h2.Initialize(protocol.Version20251125, nil)
		h2.Request(2, "tasks/get", map[string]any{"taskId": failedID})
		assert.Equal(t, int64(protocol.CodeInvalidParams), h2.errorOf(2).Code)
		h2.Request(3, "tasks/list", nil)
		listed, _ := h2.resultOf(3)
		assert.JSONEq(t, `{"tasks":[]}`, string(listed))

		for _, hh := range []*harness{h, h2} {
			require.NoError(t, hh.Close())
			require.NoError(t, hh.Wait())
		}
	})
}

// Without a tool that supports tasks, the server declares none: params.task
// is ignored and the tasks methods do not exist.
func TestTaskV1WithoutTaskTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("plain", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("plain"), nil
		})
		h.start()
		h.Request(1, "initialize", map[string]any{"protocolVersion": protocol.Version20251125, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		assert.NotContains(t, string(h.RecvResult(1)), `"tasks"`)
		h.Notify("notifications/initialized", nil)
		h.Request(2, "tools/call", map[string]any{"name": "plain", "task": map[string]any{}})
		text, _ := toolText(t, h.RecvResult(2))
		assert.Equal(t, "plain", text)
		for i, method := range []string{"tasks/get", "tasks/list", "tasks/cancel", "tasks/result"} {
			id := int64(3 + i)
			h.Request(id, method, map[string]any{"taskId": "x"})
			assert.Equal(t, int64(protocol.CodeMethodNotFound), h.errorOf(id).Code, method)
		}
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// tasks/cancel moves the task to cancelled before it answers; the handler
// sees ErrClientCancel, and what it returns afterwards is dropped.
func TestTaskV1Cancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		g := newGate()
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportRequired), g.handler("done")))
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.Request(2, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
		created, _ := h.resultOf(2)
		id := decodeTask(t, created).Task.TaskID
		<-g.started

		h.Request(3, "tasks/cancel", map[string]any{"taskId": id})
		got, notes := h.resultOf(3)
		w := decodeTask(t, got)
		assert.Equal(t, "cancelled", w.Status)
		assert.Equal(t, "The task was cancelled by request.", w.StatusMessage)
		assert.Equal(t, []string{"cancelled"}, statusNotes(t, notes))
		cause := <-g.causes
		require.ErrorIs(t, cause, server.ErrClientCancel)
		assert.Contains(t, cause.Error(), "tasks/cancel")
		assert.Equal(t, protocol.ReasonClientCancel, server.ReasonOfCause(cause))

		synctest.Wait() // the handler returned
		h.Request(4, "tasks/get", map[string]any{"taskId": id})
		got, _ = h.resultOf(4)
		assert.Equal(t, "cancelled", decodeTask(t, got).Status, "cancelled stays cancelled")
		h.Request(5, "tasks/cancel", map[string]any{"taskId": id})
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.errorOf(5).Code)
		h.Request(6, "tasks/result", map[string]any{"taskId": id})
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.errorOf(6).Code, "a cancelled task has no result")

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A 2025 task that elicits sends the request on the session, tagged with
// the task, and is input_required until the client answers.
func TestTaskV1Input(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		require.NoError(t, h.srv.AddTool(taskTool("greet", server.TaskSupportRequired), greeter))
		h.start()
		h.Initialize(protocol.Version20251125, map[string]any{"elicitation": map[string]any{}})
		h.Request(2, "tools/call", map[string]any{"name": "greet", "task": map[string]any{}})
		created, _ := h.resultOf(2)
		id := decodeTask(t, created).Task.TaskID

		note, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "input_required", decodeTask(t, note.Params).Status)
		ask, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		require.Equal(t, "elicitation/create", ask.Method)
		require.True(t, ask.ID.IsValid())
		var params struct {
			Message string                     `json:"message"`
			Meta    map[string]json.RawMessage `json:"_meta"`
		}
		require.NoError(t, json.Unmarshal(ask.Params, &params))
		assert.Equal(t, "Who are you?", params.Message)
		assert.JSONEq(t, fmt.Sprintf(`{"taskId":%q}`, id), string(params.Meta[vocab.MetaRelatedTask]))

		h.Request(3, "tasks/get", map[string]any{"taskId": id})
		got, _ := h.resultOf(3)
		assert.Equal(t, "input_required", decodeTask(t, got).Status)

		h.Send(&transport.Response{ID: ask.ID, Result: json.RawMessage(`{"action":"accept","content":{"name":"Grace"}}`)})
		h.Request(4, "tasks/result", map[string]any{"taskId": id})
		result, notes := h.resultOf(4)
		text, _ := toolText(t, result)
		assert.Equal(t, "hello, Grace (accept)", text)
		assert.Equal(t, []string{"working", "completed"}, statusNotes(t, notes))

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A 2025 task belongs to its session: it is cancelled with the session's
// cause when the session ends.
func TestTaskV1EndsWithSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		g := newGate()
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional), g.handler("done")))
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.Request(2, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
		h.resultOf(2)
		<-g.started
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
		cause := <-g.causes
		require.ErrorIs(t, cause, server.ErrTransportClose)
	})
}

// Tasks expire after their TTL (the server's, or less if the client asks):
// a running one is cancelled with ErrTaskExpired, a finished one deleted.
func TestTaskTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithTaskTTL(time.Minute), server.WithTaskPollInterval(250*time.Millisecond))
		g := newGate()
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional), g.handler("done")))
		require.NoError(t, h.srv.AddTool(taskTool("quick", server.TaskSupportOptional),
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text("quick"), nil
			}))
		h.start()
		h.Initialize(protocol.Version20251125, nil)

		call := func(id int64, tool string, ttl any) wireTask {
			task := map[string]any{}
			if ttl != nil {
				task["ttl"] = ttl
			}
			h.Request(id, "tools/call", map[string]any{"name": tool, "task": task})
			created, _ := h.resultOf(id)
			return *decodeTask(t, created).Task
		}
		running := call(2, "slow", nil)
		<-g.started
		assert.Equal(t, int64(60000), *running.TTL, "the server's TTL")
		assert.Equal(t, int64(250), running.PollInterval)
		capped := call(3, "quick", 3_600_000)
		assert.Equal(t, int64(60000), *capped.TTL, "never more than the server's")
		short := call(4, "quick", 1500.5)
		assert.Equal(t, int64(1500), *short.TTL)

		get := func(id int64, task string) *transport.Response {
			h.Request(id, "tasks/get", map[string]any{"taskId": task})
			resp, _ := h.readUntil(id)
			return resp
		}
		time.Sleep(1400 * time.Millisecond)
		assert.Nil(t, get(5, short.TaskID).Error, "alive within its TTL")
		time.Sleep(200 * time.Millisecond)
		assert.NotNil(t, get(6, short.TaskID).Error, "deleted after its TTL")

		time.Sleep(59*time.Second - 1600*time.Millisecond)
		assert.Nil(t, get(7, running.TaskID).Error)
		assert.Nil(t, get(8, capped.TaskID).Error)
		time.Sleep(1500 * time.Millisecond)
		resp := get(9, running.TaskID)
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(protocol.CodeInvalidParams), resp.Error.Code)
		assert.NotNil(t, get(10, capped.TaskID).Error)
		require.ErrorIs(t, <-g.causes, server.ErrTaskExpired)

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// The store holds at most WithMaxTasks tasks: finished ones make room,
// running ones do not.
func TestTaskLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithMaxTasks(2))
		g := newGate()
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional), g.handler("done")))
		require.NoError(t, h.srv.AddTool(taskTool("quick", server.TaskSupportOptional),
			func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text("quick"), nil
			}))
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		task := map[string]any{}

		h.Request(2, "tools/call", map[string]any{"name": "quick", "task": task})
		created, _ := h.resultOf(2)
		quickID := decodeTask(t, created).Task.TaskID
		h.Recv() // its completion
		h.Request(3, "tools/call", map[string]any{"name": "slow", "task": task})
		h.resultOf(3)
		<-g.started
		h.Request(4, "tools/call", map[string]any{"name": "slow", "task": task})
		h.resultOf(4)
		<-g.started
		h.Request(5, "tasks/get", map[string]any{"taskId": quickID})
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.errorOf(5).Code, "evicted to make room")
		h.Request(6, "tools/call", map[string]any{"name": "slow", "task": task})
		assert.Equal(t, int64(protocol.CodeServerBusy), h.errorOf(6).Code)

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// Close cancels the running tasks with ErrShutdown and waits for them.
func TestCloseCancelsTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		g := newGate()
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional), g.handler("done")))
		h.start()
		h.Request(1, "tools/call", map[string]any{"name": "slow", "_meta": meta2026(extCaps(nil))})
		h.RecvResult(1)
		<-g.started
		require.NoError(t, h.srv.Close())
		select {
		case cause := <-g.causes:
			require.ErrorIs(t, cause, server.ErrShutdown)
		default:
			t.Fatal("Close returned before the task's handler")
		}
		require.ErrorIs(t, h.Wait(), server.ErrServerClosed)
	})
}

// Shutdown lets running tasks finish once the sessions are gone, and
// cancels them when its context ends first.
func TestShutdownDrainsTasks(t *testing.T) {
	tests := []struct {
		name    string
		release bool
		want    error
	}{
		{"tasks finish", true, nil},
		{"deadline first", false, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				g := newGate()
				require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional), g.handler("done")))
				h.start()
				h.Request(1, "tools/call", map[string]any{"name": "slow", "_meta": meta2026(extCaps(nil))})
				h.RecvResult(1)
				<-g.started
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- h.srv.Shutdown(ctx) }()
				require.ErrorIs(t, h.Wait(), server.ErrServerClosed, "the idle session ends at once")
				synctest.Wait()
				select {
				case err := <-done:
					t.Fatalf("Shutdown returned %v with a task running", err)
				default:
				}
				if tt.release {
					close(g.release)
				}
				err := <-done
				if tt.want == nil {
					require.NoError(t, err)
					return
				}
				require.ErrorIs(t, err, tt.want)
				require.ErrorIs(t, <-g.causes, server.ErrShutdown)
			})
		})
	}
}

// tasks/list pages through the session's tasks, oldest first; a server
// without a TTL shows ttl null.
func TestTaskV1ListPages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithPageSize(2), server.WithTaskTTL(0))
		g := newGate()
		require.NoError(t, h.srv.AddTool(taskTool("slow", server.TaskSupportOptional), g.handler("done")))
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		var ids []string
		for i := range 3 {
			id := int64(2 + i)
			h.Request(id, "tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
			created, _ := h.resultOf(id)
			task := decodeTask(t, created).Task
			assert.Nil(t, task.TTL, "unlimited")
			ids = append(ids, task.TaskID)
			<-g.started
			time.Sleep(time.Millisecond)
		}
		type page struct {
			Tasks      []wireTask `json:"tasks"`
			NextCursor string     `json:"nextCursor"`
		}
		var p1, p2 page
		h.Request(10, "tasks/list", map[string]any{})
		raw, _ := h.resultOf(10)
		require.NoError(t, json.Unmarshal(raw, &p1))
		require.Len(t, p1.Tasks, 2)
		require.NotEmpty(t, p1.NextCursor)
		h.Request(11, "tasks/list", map[string]any{"cursor": p1.NextCursor})
		raw, _ = h.resultOf(11)
		require.NoError(t, json.Unmarshal(raw, &p2))
		require.Len(t, p2.Tasks, 1)
		assert.Empty(t, p2.NextCursor)
		got := []string{p1.Tasks[0].TaskID, p1.Tasks[1].TaskID, p2.Tasks[0].TaskID}
		assert.Equal(t, ids, got, "oldest first")
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// routeConn records the request each message the server writes is related
// to (transport.RelatedRequestFromContext), by method.
type routeConn struct {
	transport.Conn
	mu     sync.Mutex
	routes []string
}

func (c *routeConn) Write(ctx context.Context, m transport.Message) error {
	if r, ok := m.(*transport.Request); ok && r.Method == "elicitation/create" {
		id, _ := transport.RelatedRequestFromContext(ctx)
		c.mu.Lock()
		c.routes = append(c.routes, id.String())
		c.mu.Unlock()
	}
	return c.Conn.Write(ctx, m)
}

// A 2025 task's requests to the client go on the stream of a waiting
// tasks/result when there is one, else on the session's own stream (not
// the stream of the tools/call answered long ago).
func TestTaskV1Routing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		require.NoError(t, h.srv.AddTool(taskTool("twice", server.TaskSupportRequired),
			func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
				if _, err := greeter(ctx, req); err != nil {
					return nil, err
				}
				return greeter(ctx, req)
			}))
		var rc *routeConn
		h.Client = mcptest.Pipe(t, h.srv, mcptest.WithServerConn(func(conn transport.Conn) transport.Conn {
			rc = &routeConn{Conn: conn}
			return rc
		}))
		h.Initialize(protocol.Version20251125, map[string]any{"elicitation": map[string]any{}})

		h.Request(2, "tools/call", map[string]any{"name": "twice", "task": map[string]any{}})
		created, _ := h.resultOf(2)
		id := decodeTask(t, created).Task.TaskID
		answer := func() {
			for {
				m, ok := h.Recv().(*transport.Request)
				require.True(t, ok)
				if m.Method == "elicitation/create" {
					h.Send(&transport.Response{ID: m.ID, Result: json.RawMessage(`{"action":"accept","content":{"name":"Ann"}}`)})
					return
				}
			}
		}
		answer()
		h.Request(3, "tasks/result", map[string]any{"taskId": id})
		synctest.Wait()
		answer()
		result, _ := h.resultOf(3)
		text, _ := toolText(t, result)
		assert.Equal(t, "hello, Ann (accept)", text)
		rc.mu.Lock()
		assert.Equal(t, []string{"", "3"}, rc.routes)
		rc.mu.Unlock()
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}
