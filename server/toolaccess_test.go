package server_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// publicOnly is a tool access check that refuses every tool needing a scope.
func publicOnly(_ *server.Request, t *server.Tool) bool { return len(t.Scopes) == 0 }

func addScopedTools(t *testing.T, srv *server.Server) {
	t.Helper()
	for _, tool := range []server.Tool{
		{Name: "a"},
		{Name: "b", Scopes: []string{"secret"}},
		{Name: "c"},
		{Name: "d", Scopes: []string{"secret", "more"}},
		{Name: "e"},
		{Name: "f"},
	} {
		require.NoError(t, srv.AddTool(tool, okTool))
	}
}

// WithToolAccess filters tools/list before paginating: every page is full
// and the cursors walk the visible tools only.
func TestToolAccessFiltersList(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t, server.WithPageSize(2), server.WithToolAccess(publicOnly))
	addScopedTools(t, h.srv)
	toolsStart(h)

	page, cursor := toolsPage(h, 2, "")
	assert.Equal(t, []string{"a", "c"}, page)
	page, cursor = toolsPage(h, 3, cursor)
	assert.Equal(t, []string{"e", "f"}, page)
	assert.Empty(t, cursor)
	toolsStop(h)
}

// Without WithToolAccess every tool is listed, and Scopes never reach the
// wire.
func TestToolScopesNotSent(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	addScopedTools(t, h.srv)
	toolsStart(h)
	h.Request(2, "tools/list", nil)
	raw := h.RecvResult(2)
	assert.NotContains(t, string(raw), "secret")
	var res struct {
		Tools []json.RawMessage `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	assert.Len(t, res.Tools, 6)
	assert.JSONEq(t, `{"name":"b","inputSchema":{"type":"object"}}`, string(res.Tools[1]))
	toolsStop(h)

	d, ok := h.srv.Tool("d")
	assert.True(t, ok)
	assert.Equal(t, []string{"secret", "more"}, d.Scopes)
	a, ok := h.srv.Tool("a")
	assert.True(t, ok)
	assert.Nil(t, a.Scopes)
	_, ok = h.srv.Tool("no-such-tool")
	assert.False(t, ok)
	assert.Equal(t, []string{"more", "secret"}, h.srv.AllToolScopes())
	h.srv.RemoveTools("b", "d")
	assert.Empty(t, h.srv.AllToolScopes())
}

// A tools/call of a tool the access check refuses is answered exactly like
// a call of an unknown tool, so that the refusal says nothing about the
// tool; an allowed tool runs.
func TestToolAccessRefusesCallAsUnknown(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t, server.WithToolAccess(publicOnly))
	addScopedTools(t, h.srv)
	toolsStart(h)

	h.SendCallTool(2, "b", `{}`)
	refused := h.RecvResponseTo(2)
	require.NotNil(t, refused.Error)
	h.SendCallTool(4, "nope", `{}`)
	unknown := h.RecvResponseTo(4)
	require.NotNil(t, unknown.Error)
	assert.Equal(t, unknown.Error.Code, refused.Error.Code)
	assert.Equal(t, `unknown tool: "b"`, refused.Error.Message)
	assert.Equal(t, `unknown tool: "nope"`, unknown.Error.Message)

	h.SendCallTool(5, "a", `{}`)
	text, isErr := toolText(t, h.RecvResult(5))
	assert.Equal(t, "ok", text)
	assert.False(t, isErr)
	toolsStop(h)
}

// Params the core cannot read at arrival (_meta not an object, uri or name
// not a string) left the request without a name for the middleware, the
// audit log, per-tool limits, metrics and spans: tools/call refuses them
// with -32602 rather than run a tool none of them saw, even when the exact
// "name" member names a registered tool.
func TestCallToolRefusesUnreadableParams(t *testing.T) {
	testkit.Watchdog(t)
	var (
		mu   sync.Mutex
		seen []string
	)
	h := newHarness(t, server.WithMiddleware(func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "tools/call" {
				mu.Lock()
				seen = append(seen, req.Name)
				mu.Unlock()
			}
			return next(ctx, req)
		}
	}))
	ran := make(chan struct{}, 8)
	require.NoError(t, h.srv.AddTool(server.Tool{Name: "deploy"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		ran <- struct{}{}
		return server.Text("deployed"), nil
	}))
	toolsStart(h)
	for i, params := range []string{
		`{"NAME":"deploy","_meta":5}`, `{"Name":"deploy","_meta":5}`,
		`{"name":"deploy","_meta":5}`, `{"name":"deploy","_meta":7,"arguments":{}}`,
		`{"name":"deploy","uri":5}`, `{"name":"deploy","name":5}`,
	} {
		h.Request(int64(10+i), "tools/call", params)
		e := h.RecvError(int64(10 + i))
		assert.Equal(t, int(protocol.CodeInvalidParams), int(e.Code), params)
		assert.Contains(t, e.Message, "invalid tools/call params", params)
	}
	assert.Empty(t, ran, "no tool ran")
	h.Request(20, "tools/call", `{"name":"deploy","_meta":{}}`)
	text, _ := toolText(t, h.RecvResult(20))
	assert.Equal(t, "deployed", text, "readable params still call the tool")
	toolsStop(h)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "deploy", seen[len(seen)-1], "the middleware saw the name of the tool that ran")
}
