package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// searchQuery is one of testdata/search/queries.json: a need, in a
// user's words, and the tool that meets it.
type searchQuery struct {
	Query string `json:"query"`
	Tool  string `json:"tool"`
}

// readSearchData reads the synthetic catalog and its queries.
func readSearchData(t testing.TB) ([]searchTool, []searchQuery) {
	t.Helper()
	var tools []searchTool
	var queries []searchQuery
	for path, v := range map[string]any{"tools.json": &tools, "queries.json": &queries} {
		b, err := os.ReadFile(filepath.Join("testdata", "search", path))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, v))
	}
	return tools, queries
}

// startCatalogUpstream serves tools over Streamable HTTP on loopback;
// each call answers "called NAME" and its arguments.
func startCatalogUpstream(t testing.TB, tools []searchTool) string {
	t.Helper()
	srv := server.New()
	for _, tool := range tools {
		require.NoError(t, srv.AddTool(server.Tool{Name: tool.Name, Description: tool.Description, InputSchema: tool.InputSchema},
			func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text("called " + req.Name + " with " + string(req.Arguments)), nil
			}))
	}
	h := streamable.New(srv)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
		_ = srv.Close()
	})
	return ts.URL
}

// searched returns the names search_tools answered, checking that its
// text is its structured content.
func searched(t *testing.T, res *server.CallToolResult) []string {
	t.Helper()
	require.False(t, res.IsError, res.Text())
	var out struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Text()), &out))
	structured, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	assert.JSONEq(t, res.Text(), string(structured), "the text is the structured content")
	var names []string
	for _, tool := range out.Tools {
		require.NotEmpty(t, tool.Description, tool.Name)
		require.NotEmpty(t, tool.InputSchema, tool.Name)
		names = append(names, tool.Name)
	}
	return names
}

// denied is the tool the callers' policy hides in the search tests.
const denied = "pg_delete_role"

// hideDenied is a tool access check, as a policy's, that hides denied.
func hideDenied(_ *server.Request, t *server.Tool) bool { return t.Name != denied }

// responseBytes returns the bytes of the JSON-RPC response of id that
// carries result.
func responseBytes(t *testing.T, id int64, result json.RawMessage) int {
	t.Helper()
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	require.NoError(t, err)
	return len(b)
}

// TestSearchFindsTheTool is issue 79's acceptance of the search: in
// front of an upstream of 500 tools, tools/list lists search_tools and
// call_tool; for at least 90 of the 100 written queries the expected
// tool is among search_tools' first 3; the answer of a search (limit 3
// and 5) is under 5% of the bytes of the full tools/list; the tool the
// policy denies is never found, and call_tool refuses it as a direct
// call of an unknown tool is refused.
func TestSearchFindsTheTool(t *testing.T) {
	testkit.Watchdog(t)
	tools, queries := readSearchData(t)
	require.Len(t, queries, 100)
	url := startCatalogUpstream(t, tools)

	// The full list, as a caller of the same policy lists it without
	// search: every page's response.
	plain := server.New(server.WithToolAccess(hideDenied))
	g, err := gateway.Mount(t.Context(), plain, gateway.Config{Upstreams: []gateway.Upstream{{Name: "cat", URL: url}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(); _ = plain.Close() })
	pc := mcptest.Connect(t, plain)
	full, cursor, id := 0, "", int64(0)
	for {
		id++
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, rpcErr := pc.Call("tools/list", params)
		require.Nil(t, rpcErr)
		full += responseBytes(t, id, raw)
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		require.NoError(t, json.Unmarshal(raw, &page))
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	require.Len(t, pc.ListTools(), len(tools)-1, "the policy hides one tool")

	srv := server.New(server.WithToolAccess(hideDenied))
	gs, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "cat", URL: url}}, Search: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = gs.Close(); _ = srv.Close() })
	c := mcptest.Connect(t, srv)
	assert.Equal(t, []string{"search_tools", "call_tool"}, toolNames(c))

	hits := 0
	for _, q := range queries {
		names := searched(t, c.CallTool("search_tools", map[string]any{"query": q.Query, "limit": 3}))
		require.LessOrEqual(t, len(names), 3)
		require.NotContains(t, names, denied, "a tool the policy denies is never found (%q)", q.Query)
		if slices.Contains(names, q.Tool) {
			hits++
		} else {
			t.Logf("missed %s for %q: %v", q.Tool, q.Query, names)
		}
	}
	t.Logf("search: the expected tool in the first 3 for %d/100 queries", hits)
	assert.GreaterOrEqual(t, hits, 90)

	for _, limit := range []int{3, 5} {
		raw, rpcErr := c.Call("tools/call", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "schedule a meeting with Alice tomorrow", "limit": limit}})
		require.Nil(t, rpcErr)
		answer := responseBytes(t, 1, raw)
		t.Logf("search: limit %d answers %d bytes, the full tools/list %d: %.2f%%", limit, answer, full, 100*float64(answer)/float64(full))
		assert.Less(t, float64(answer), 0.05*float64(full))
	}

	// The denied tool: never found, even asked for by its own words;
	// called through call_tool, refused exactly as a direct call of it,
	// and as a direct call of a tool that does not exist.
	assert.NotContains(t, searched(t, c.CallTool("search_tools", map[string]any{"query": "delete a postgres database role", "limit": 10})), denied)
	_, viaSearch := c.Call("tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": denied, "arguments": map[string]any{"role_id": "r1"}}})
	_, direct := c.Call("tools/call", map[string]any{"name": denied, "arguments": map[string]any{"role_id": "r1"}})
	_, unknown := c.Call("tools/call", map[string]any{"name": "no_such_tool", "arguments": map[string]any{}})
	require.NotNil(t, viaSearch)
	assert.Equal(t, direct, viaSearch)
	assert.Equal(t, int64(protocol.CodeInvalidParams), viaSearch.Code)
	assert.Equal(t, `unknown tool: "`+denied+`"`, viaSearch.Message)
	assert.Equal(t, `unknown tool: "no_such_tool"`, unknown.Message)

	// A tool found is called through call_tool as directly.
	got := c.CallTool("call_tool", map[string]any{"name": "calendar_create_event", "arguments": map[string]any{"title": "1:1"}})
	assert.Equal(t, c.CallTool("calendar_create_event", map[string]any{"title": "1:1"}), got)
	assert.Equal(t, `called calendar_create_event with {"title":"1:1"}`, got.Text())
}

// TestSearchCallToolIsTheToolsCall: a call through call_tool is the
// named tool's call for the server's telemetry and checks: its span is
// "tools/call NAME" with gen_ai.tool.name the tool's, its metrics are
// labeled with the tool, the upstream's too, and none names call_tool;
// its arguments are validated against the tool's schema, with the same
// answer as a direct call.
func TestSearchCallToolIsTheToolsCall(t *testing.T) {
	testkit.Watchdog(t)
	tools, _ := readSearchData(t)
	url := startCatalogUpstream(t, tools)
	tr := newTraced(t, tracetest.NewInMemoryExporter(), telemetry.MetricsConfig{Upstreams: []string{"cat"}})
	g, err := gateway.Mount(t.Context(), tr.srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "cat", URL: url}}, Registerer: tr.reg, Search: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	c := mcptest.Connect(t, tr.srv)

	res := c.CallTool("call_tool", map[string]any{"name": "git_diff", "arguments": map[string]any{"staged": true}})
	assert.Equal(t, `called git_diff with {"staged":true}`, res.Text())
	bad := map[string]any{"staged": "yes"} // a boolean in git_diff's schema
	viaSearch := c.CallTool("call_tool", map[string]any{"name": "git_diff", "arguments": bad})
	assert.True(t, viaSearch.IsError)
	assert.Contains(t, viaSearch.Text(), `invalid arguments for tool "git_diff"`)
	assert.Equal(t, c.CallTool("git_diff", bad), viaSearch)
	require.NoError(t, tr.srv.Shutdown(t.Context()))

	var diffs int
	for _, s := range tr.spans.GetSpans() {
		assert.NotEqual(t, "tools/call call_tool", s.Name)
		if s.Name == "tools/call git_diff" && s.SpanKind == trace.SpanKindServer {
			diffs++
			assert.Equal(t, "git_diff", attr(s, "gen_ai.tool.name"))
			assert.Equal(t, "cat", attr(s, "vigil.upstream"))
		}
	}
	assert.Equal(t, 3, diffs, "each call's span names the tool")
	got := gathered(t, tr.reg)
	for series := range got {
		assert.NotContains(t, series, "gen_ai_tool_name=call_tool", series)
	}
	assert.InDelta(t, 1, got["mcp_gateway_upstream_calls_total{gen_ai_tool_name=git_diff,mcp_method_name=tools/call,outcome=ok,upstream=cat}"], 0)
	assert.Equal(t, map[string]float64{"git_diff": 3}, pick(servedFrom(got, "cat"), map[string]float64{"git_diff": 0}))
}

// TestSearchBounds: what a caller sends the search is bounded: a query
// over 1,024 characters, an empty one, a limit out of 1 to 10 are
// invalid arguments; call_tool without a name, with a name over 128
// bytes or not a string, with arguments not an object, or naming
// call_tool, is refused -32602 at admission; a limit under the number of
// matches caps the answer.
func TestSearchBounds(t *testing.T) {
	testkit.Watchdog(t)
	tools, _ := readSearchData(t)
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "cat", URL: startCatalogUpstream(t, tools)}}, Search: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(); _ = srv.Close() })
	c := mcptest.Connect(t, srv)

	long := make([]byte, 1025)
	for i := range long {
		long[i] = 'a'
	}
	for _, args := range []map[string]any{
		{"query": string(long)}, {"query": ""}, {"query": "files", "limit": 0}, {"query": "files", "limit": 11}, {"limit": 3}, {"query": "files", "other": 1},
	} {
		res := c.CallTool("search_tools", args)
		assert.True(t, res.IsError, "%v", args)
		assert.Contains(t, res.Text(), `invalid arguments for tool "search_tools"`)
	}
	assert.Empty(t, searched(t, c.CallTool("search_tools", map[string]any{"query": string(long[:1024])})), "1,024 characters are searched")
	assert.Len(t, searched(t, c.CallTool("search_tools", map[string]any{"query": "list"})), 5, "5 when no limit is given")
	assert.Len(t, searched(t, c.CallTool("search_tools", map[string]any{"query": "list", "limit": 10})), 10)

	longName := string(long[:129])
	for args, want := range map[string]string{
		`{}`:                                  "call_tool: name must be the tool's name, a string",
		`{"name":3}`:                          "call_tool: name must be the tool's name, a string",
		`{"name":"` + longName + `"}`:         "call_tool: tool name over 128 bytes",
		`{"name":"git_diff","arguments":[1]}`: "call_tool: arguments must be an object",
		`{"name":"call_tool"}`:                "call_tool: name must be another tool's",
	} {
		_, rpcErr := c.Call("tools/call", map[string]any{"name": "call_tool", "arguments": json.RawMessage(args)})
		require.NotNil(t, rpcErr, args)
		assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code, args)
		assert.Equal(t, want, rpcErr.Message, args)
	}
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "call_tool", "arguments": "git_diff"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code)
	// Through call_tool, search_tools is a tool as others.
	assert.NotEmpty(t, searched(t, c.CallTool("call_tool", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": "git branch"}})))
}

// TestSearchMountRefusesACollision: Mount with Search fails when the
// server serves a tool named search_tools already, and an upstream's
// tool named call_tool collides with the server's own.
func TestSearchMountRefusesACollision(t *testing.T) {
	testkit.Watchdog(t)
	url := startCatalogUpstream(t, []searchTool{{Name: "call_tool", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	srv := server.New()
	t.Cleanup(func() { _ = srv.Close() })
	_, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "cat", URL: url}}, Search: true})
	require.ErrorContains(t, err, `tool "call_tool" of upstream cat collides with one of the server itself`)
	assert.Empty(t, srv.ToolNames(), "a refused mount leaves no search")

	own := server.New()
	t.Cleanup(func() { _ = own.Close() })
	require.NoError(t, own.AddTool(server.Tool{Name: "search_tools"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("own"), nil
	}))
	_, err = gateway.Mount(t.Context(), own, gateway.Config{Upstreams: []gateway.Upstream{{Name: "cat", URL: url}}, Search: true})
	require.ErrorContains(t, err, `a tool named "search_tools" is registered already`)
}

// TestSearchCallToolAsks: a tool that asks its caller for input works
// through call_tool in both eras: a 2025-11-25 session is asked on the
// session (elicitation and sampling), and a 2026-07-28 request gets
// input_required, whose retry through call_tool (the requestState bound
// to the named tool's call) completes, once.
func TestSearchCallToolAsks(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	addAsking(t, u)
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: u.url}}, Search: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close(); _ = srv.Close() })

	caps := map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}}
	session := mcptest.Connect(t, srv, mcptest.WithCapabilities(caps),
		mcptest.WithRequestHandler(func(_ context.Context, req *transport.Request) (any, error) {
			switch req.Method {
			case "elicitation/create":
				return map[string]any{"action": "accept", "content": map[string]any{"name": "Bob"}}, nil
			case "sampling/createMessage":
				return map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": "hi"}, "model": "m"}, nil
			}
			return nil, errors.New("unexpected " + req.Method)
		}))
	assert.Equal(t, "hello Bob", session.CallTool("call_tool", map[string]any{"name": "ask"}).Text())

	c := mcptest.Pipe(t, srv)
	call := map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "ask", "arguments": map[string]any{}}, "_meta": meta2026(caps)}
	c.Request(1, "tools/call", call)
	var r inputRequired
	require.NoError(t, json.Unmarshal(c.RecvResult(1), &r))
	require.Equal(t, "input_required", r.ResultType)
	require.Contains(t, r.InputRequests, "user_name")
	call["inputResponses"] = map[string]any{
		"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Alice"}},
		"greeting":  map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "hi"}, "model": "m"},
	}
	call["requestState"] = r.RequestState
	c.Request(2, "tools/call", call)
	assert.Contains(t, string(c.RecvResult(2)), "hello Alice")
	c.Request(3, "tools/call", call)
	assert.Equal(t, int64(protocol.CodeInvalidParams), c.RecvError(3).Code, "a requestState is used once")

	// The requestState is bound to the named tool's call: a fresh one
	// does not serve a call of another tool, and does serve a direct call
	// of the same.
	c.Request(4, "tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "ask", "arguments": map[string]any{}}, "_meta": meta2026(caps)})
	var again inputRequired
	require.NoError(t, json.Unmarshal(c.RecvResult(4), &again))
	require.Equal(t, "input_required", again.ResultType)
	other := map[string]any{"name": "hello", "arguments": map[string]any{}, "_meta": meta2026(caps), "inputResponses": call["inputResponses"], "requestState": again.RequestState}
	c.Request(5, "tools/call", other)
	assert.Equal(t, int64(protocol.CodeInvalidParams), c.RecvError(5).Code)
	c.Request(6, "tools/call", map[string]any{"name": "ask", "arguments": map[string]any{}, "_meta": meta2026(caps), "inputResponses": call["inputResponses"], "requestState": again.RequestState})
	assert.Contains(t, string(c.RecvResult(6)), "hello Alice")
}
