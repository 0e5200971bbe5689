package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// meta2026 is the _meta of a 2026-07-28 request whose client declares
// caps.
func meta2026(caps map[string]any) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    protocol.Version20260728,
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]string{"name": "t", "version": "1"},
	}
}

// addAsking adds to the upstream "ask", which asks the client's name under
// the key user_name (elicitation) and its greeting under greeting
// (sampling) in one round, and "ask_task", a tool with task support that
// asks the name and then continues as a task.
func addAsking(t *testing.T, u *fakeUpstream) {
	t.Helper()
	name := func(ctx context.Context) (string, error) {
		res, err := server.Elicit(server.ContextWithInputKey(ctx, "user_name"), &server.ElicitParams{
			Message: "Name?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		})
		if err != nil {
			return "", err
		}
		return fmt.Sprint(res.Content["name"]), nil
	}
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "ask"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		who, errName := name(ctx)
		_, errSample := server.CreateMessage(server.ContextWithInputKey(ctx, "greeting"), &server.CreateMessageParams{
			Messages: []server.SamplingMessage{{Role: server.RoleUser, Content: []server.Content{&server.TextContent{Text: "greet"}}}}, MaxTokens: 5,
		})
		if errName != nil {
			return nil, errName
		}
		if errSample != nil {
			return nil, errSample
		}
		return server.Text("hello " + who), nil
	}))
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "ask_task", Execution: &server.ToolExecution{TaskSupport: server.TaskSupportOptional, Deferred: true}},
		func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			who, err := name(ctx)
			if err != nil {
				return nil, err
			}
			return server.RunAsTask(ctx, func(ctx context.Context) (*server.CallToolResult, error) {
				var more json.RawMessage
				if err := server.CallClient(server.ContextWithInputKey(ctx, "more"), "elicitation/create", map[string]any{
					"message": "More?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}},
				}, &more); err != nil {
					return nil, err
				}
				return server.Text("task done for " + who + " with " + string(more)), nil
			})
		}))
}

type inputRequired struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  string                     `json:"requestState"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
}

// TestStatelessCallerRelayed: in front of an upstream that speaks
// 2026-07-28, a 2026-07-28 caller's rounds are relayed: the upstream's
// questions arrive together under its keys, its requestState sealed in
// the gateway's (used once, bound to the arguments), and the answers
// reach it; the caller's capabilities are what the upstream sees.
func TestStatelessCallerRelayed(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	addAsking(t, u)
	c := mcptest.Pipe(t, frontServer(t, gateway.Upstream{Name: "a", URL: u.url}))
	caps := map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}}
	c.Request(1, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": meta2026(caps)})
	var r inputRequired
	require.NoError(t, json.Unmarshal(c.RecvResult(1), &r))
	require.Equal(t, "input_required", r.ResultType)
	require.Contains(t, r.InputRequests, "user_name")
	require.Contains(t, r.InputRequests, "greeting", "both questions in one round")
	assert.Contains(t, string(r.InputRequests["user_name"]), `"method":"elicitation/create"`)

	answers := map[string]any{
		"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}},
		"greeting":  map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "hi"}, "model": "m"},
	}
	c.Request(2, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": meta2026(caps), "inputResponses": answers, "requestState": r.RequestState})
	assert.Contains(t, string(c.RecvResult(2)), "hello Alice")

	c.Request(3, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": meta2026(caps), "inputResponses": answers, "requestState": r.RequestState})
	assert.Equal(t, int64(protocol.CodeInvalidParams), c.RecvError(3).Code, "a requestState is used once")

	// Without sampling declared, the upstream asks only what the caller
	// can answer (the gateway itself could answer sampling: it must not
	// say so for its caller).
	c.Request(4, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": meta2026(map[string]any{"elicitation": map[string]any{}})})
	var only inputRequired
	require.NoError(t, json.Unmarshal(c.RecvResult(4), &only))
	assert.Contains(t, only.InputRequests, "user_name")
	assert.NotContains(t, only.InputRequests, "greeting")
}

// TestStatelessCallerTaskRelayed: a tool the upstream turns into a task
// after an input round is a task of the gateway's for the caller, which
// follows the upstream's: its question in the task reaches the caller
// through tasks/get and tasks/update, and its result is the task's.
func TestStatelessCallerTaskRelayed(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	addAsking(t, u)
	c := mcptest.Pipe(t, frontServer(t, gateway.Upstream{Name: "a", URL: u.url}))
	caps := map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
	c.Request(1, "tools/call", map[string]any{"name": "ask_task", "arguments": map[string]any{}, "_meta": meta2026(caps)})
	var r inputRequired
	require.NoError(t, json.Unmarshal(c.RecvResult(1), &r))
	require.Equal(t, "input_required", r.ResultType, "the input comes before the task")
	assert.Empty(t, r.TaskID)
	c.Request(2, "tools/call", map[string]any{
		"name": "ask_task", "arguments": map[string]any{}, "_meta": meta2026(caps),
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}}}, "requestState": r.RequestState,
	})
	require.NoError(t, json.Unmarshal(c.RecvResult(2), &r))
	require.Equal(t, "task", r.ResultType)
	require.NotEmpty(t, r.TaskID)

	id := int64(3)
	get := func() inputRequired {
		id++
		c.Request(id, "tasks/get", map[string]any{"taskId": r.TaskID, "_meta": meta2026(caps)})
		var g inputRequired
		require.NoError(t, json.Unmarshal(c.RecvResult(id), &g))
		return g
	}
	g := get()
	for g.Status == "working" {
		g = get() // the gateway's task waits for the upstream's question
	}
	require.Equal(t, "input_required", g.Status)
	require.Contains(t, g.InputRequests, "more", "the upstream task's question, under its key")
	id++
	c.Request(id, "tasks/update", map[string]any{
		"taskId": r.TaskID, "_meta": meta2026(caps),
		"inputResponses": map[string]any{"more": map[string]any{"action": "accept", "content": map[string]any{}}},
	})
	c.RecvResult(id)
	for g.Status != "completed" && g.Status != "failed" {
		g = get()
	}
	id++
	c.Request(id, "tasks/get", map[string]any{"taskId": r.TaskID, "_meta": meta2026(caps)})
	final := string(c.RecvResult(id))
	assert.Contains(t, final, `"status":"completed"`)
	assert.Contains(t, final, "task done for Alice")
	assert.Contains(t, final, `\"action\":\"accept\"`, "the caller's answer reached the upstream's task")
}

// TestStatelessCallerTooManyQuestions: an upstream round that asks more
// than 16 questions at once fails the call, saying so.
func TestStatelessCallerTooManyQuestions(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "flood"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		asks := map[string]json.RawMessage{}
		for i := range 17 {
			asks[fmt.Sprint("k", i)] = json.RawMessage(`{"method":"roots/list","params":{}}`)
		}
		return nil, &server.InputRequired{Requests: asks}
	}))
	c := mcptest.Pipe(t, frontServer(t, gateway.Upstream{Name: "a", URL: u.url}))
	c.Request(1, "tools/call", map[string]any{"name": "flood", "arguments": map[string]any{}, "_meta": meta2026(map[string]any{"roots": map[string]any{}})})
	rpcErr := c.RecvError(1)
	assert.Equal(t, int64(protocol.CodeInternal), rpcErr.Code)
	assert.Contains(t, rpcErr.Message, "17 inputRequests")
}
