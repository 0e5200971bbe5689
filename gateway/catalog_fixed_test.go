package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// fixedFile fixes three arguments of the upstream's whoami and serves it
// at two endpoints besides the default one, one of them searching.
const fixedFile = `
upstreams:
  up:
    tools:
      whoami:
        arguments:
          tenantId: {fixed: acme}
          kind: {fixed: user}
          scope: {fixed: read}
endpoints:
  partner:
    tools: ["up/whoami"]
  find:
    tools: ["up/whoami"]
    search: true
`

// TestCatalogFixedArgumentSpellings: a call that sends a fixed argument
// under another spelling encoding/json matches to it (another case, the
// Kelvin sign for k, long s for s) is refused -32602 and never reaches
// the upstream, by every route to the tool: tools/call at the default
// endpoint and at another, search's call_tool, a task, a 2026-07-28
// call; by each, a call without one reaches it with the fixed values.
func TestCatalogFixedArgumentSpellings(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "up")
	var mu sync.Mutex
	var got []string // the arguments of each call the upstream's whoami got
	schema := json.RawMessage(`{"type":"object","properties":{"tenantId":{"type":"string"},"kind":{"type":"string"},"scope":{"type":"string"},"message":{"type":"string"}}}`)
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "whoami", InputSchema: schema, Execution: &server.ToolExecution{TaskSupport: server.TaskSupportOptional}},
		func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			mu.Lock()
			got = append(got, string(req.Arguments))
			mu.Unlock()
			return server.Text(string(req.Arguments)), nil
		}))
	calls := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	cat, err := gateway.ParseCatalog([]byte(fixedFile))
	require.NoError(t, err)
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "up", URL: u.url}}, Catalog: cat})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = g.Close()
		_ = srv.Close()
	})
	ep := streamable.New(srv)
	t.Cleanup(func() { _ = ep.Close() })
	mux := http.NewServeMux()
	mux.Handle("/mcp", ep)
	mux.Handle("/mcp/", g.Endpoints(ep))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	client := func(path string) *mcptest.Client {
		c := mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: ts.URL + path}))
		c.Initialize("", nil)
		return c
	}
	direct, partner, find := client("/mcp"), client("/mcp/partner"), client("/mcp/find")
	stateless := mcptest.Pipe(t, srv)

	// Each route calls whoami with args and returns the text of its
	// result, or its error.
	call := func(c *mcptest.Client, args any) (string, *transport.Error) {
		raw, rpcErr := c.Call("tools/call", map[string]any{"name": "whoami", "arguments": args})
		if rpcErr != nil {
			return "", rpcErr
		}
		var res struct{ Content []struct{ Text string } }
		require.NoError(t, json.Unmarshal(raw, &res))
		require.Len(t, res.Content, 1, "%s", raw)
		return res.Content[0].Text, nil
	}
	routes := map[string]func(args any) (string, *transport.Error){
		"tools/call at /mcp":         func(args any) (string, *transport.Error) { return call(direct, args) },
		"tools/call at /mcp/partner": func(args any) (string, *transport.Error) { return call(partner, args) },
		"call_tool at /mcp/find": func(args any) (string, *transport.Error) {
			raw, rpcErr := find.Call("tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "whoami", "arguments": args}})
			if rpcErr != nil {
				return "", rpcErr
			}
			var res struct{ Content []struct{ Text string } }
			require.NoError(t, json.Unmarshal(raw, &res))
			require.Len(t, res.Content, 1, "%s", raw)
			return res.Content[0].Text, nil
		},
		"a task at /mcp": func(args any) (string, *transport.Error) {
			raw, rpcErr := direct.Call("tools/call", map[string]any{"name": "whoami", "arguments": args, "task": map[string]any{}})
			if rpcErr != nil {
				return "", rpcErr
			}
			var created struct{ Task struct{ TaskID string } }
			require.NoError(t, json.Unmarshal(raw, &created))
			require.NotEmpty(t, created.Task.TaskID, "%s", raw)
			raw, rpcErr = direct.Call("tasks/result", map[string]string{"taskId": created.Task.TaskID})
			if rpcErr != nil {
				return "", rpcErr
			}
			var res struct{ Content []struct{ Text string } }
			require.NoError(t, json.Unmarshal(raw, &res))
			require.Len(t, res.Content, 1, "%s", raw)
			return res.Content[0].Text, nil
		},
		"a 2026-07-28 call": func(args any) (string, *transport.Error) {
			raw, rpcErr := stateless.Call("tools/call", map[string]any{"name": "whoami", "arguments": args, "_meta": meta2026(map[string]any{})})
			if rpcErr != nil {
				return "", rpcErr
			}
			var res struct{ Content []struct{ Text string } }
			require.NoError(t, json.Unmarshal(raw, &res))
			require.Len(t, res.Content, 1, "%s", raw)
			return res.Content[0].Text, nil
		},
	}
	spellings := []string{"tenantId", "tenantid", "TENANTID", "TenantID", "Kind", "\u212aind", "\u212aIND", "\u017fcope", "SCOPE", "\u017fCOPE"}
	for route, do := range routes {
		text, rpcErr := do(map[string]any{"message": "hi"})
		require.Nil(t, rpcErr, "%s: %v", route, rpcErr)
		assert.JSONEq(t, `{"tenantId":"acme","kind":"user","scope":"read","message":"hi"}`, text, route)
		before := calls()
		for _, key := range spellings {
			_, rpcErr := do(map[string]any{"message": "hi", key: "victim"})
			require.NotNil(t, rpcErr, "%s: %+q is refused", route, key)
			assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code, "%s: %+q", route, key)
			assert.Contains(t, rpcErr.Message, "is not an argument of this tool", "%s: %+q", route, key)
		}
		assert.Equal(t, before, calls(), "%s: no refused call reached the upstream", route)
		text, rpcErr = do(map[string]any{"message": "hi", "tenant": "x", "kin": "y", "scopes": "z"})
		require.Nil(t, rpcErr, "%s: names that encoding/json does not match to a fixed one pass: %v", route, rpcErr)
		assert.JSONEq(t, `{"tenantId":"acme","kind":"user","scope":"read","message":"hi","tenant":"x","kin":"y","scopes":"z"}`, text, route)
	}
}
