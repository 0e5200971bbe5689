package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// curatedUpstream serves "echo" (its arguments, as JSON; message and
// tenant, tenant required), "other" and "secret" over Streamable HTTP,
// and the prompt "simple"; got holds the arguments of each echo.
type curatedUpstream struct {
	url string
	srv *server.Server
	mu  sync.Mutex
	got []string
}

func startCuratedUpstream(t *testing.T) *curatedUpstream {
	t.Helper()
	u := &curatedUpstream{srv: server.New()}
	schema := json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"},"tenant":{"type":"string"}},"required":["tenant"]}`)
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "echo", Description: "Echoes.", InputSchema: schema},
		func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			u.mu.Lock()
			u.got = append(u.got, string(req.Arguments))
			u.mu.Unlock()
			return server.Text(string(req.Arguments)), nil
		}))
	for _, name := range []string{"other", "secret"} {
		require.NoError(t, u.srv.AddTool(server.Tool{Name: name}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(name), nil
		}))
	}
	complete := func(context.Context, *server.CompleteRequest) ([]string, error) { return []string{"ex"}, nil }
	require.NoError(t, u.srv.AddPrompt(server.Prompt{Name: "simple", Description: "As listed.", Arguments: []server.PromptArgument{{Name: "x", Complete: complete}}},
		func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
			return &server.GetPromptResult{Messages: []*server.PromptMessage{{Role: "user", Content: &server.TextContent{Text: "hi"}}}}, nil
		}))
	for _, uri := range []string{"note:a", "note:b"} {
		require.NoError(t, u.srv.AddResource(server.Resource{URI: uri, Name: uri}, func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
			return &server.ReadResourceResult{Contents: []*server.ResourceContents{{URI: uri, Text: uri}}}, nil
		}))
	}
	h := streamable.New(u.srv)
	ts := httptest.NewServer(h)
	u.url = ts.URL
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
		_ = u.srv.Close()
	})
	return u
}

// lastArguments returns the arguments of the upstream's last echo.
func (u *curatedUpstream) lastArguments() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.got) == 0 {
		return ""
	}
	return u.got[len(u.got)-1]
}

// curatedFile is a catalog for the upstream "up" of startCuratedUpstream;
// its default endpoint serves everything (default: all), though an
// endpoint has scopes.
const curatedFile = `
upstreams:
  up:
    tools:
      echo:
        name: say
        title: Say
        description: Repeats what you say.
        annotations: {readOnlyHint: true}
        tags: [demo]
        arguments:
          message: {default: "hi"}
          tenant: {fixed: "acme"}
      secret: {hide: true}
    prompts:
      simple: {name: greet, description: A greeting.}
endpoints:
  demo:
    tools: ["tag:demo"]
    prompts: ["up/simple"]
    resources: ["up/note:a"]
    scopes: [demo.read]
  others:
    tools: ["up/oth*"]
default: all
`

// mountCatalog mounts the upstream u with the catalog file on a new
// server.
func mountCatalog(t *testing.T, u *curatedUpstream, file string, reg prometheus.Registerer) (*server.Server, *gateway.Gateway) {
	t.Helper()
	cat, err := gateway.ParseCatalog([]byte(file))
	require.NoError(t, err)
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "up", URL: u.url}}, Catalog: cat, Registerer: reg})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = g.Close()
		_ = srv.Close()
	})
	return srv, g
}

// TestCatalogCurates: a renamed tool is listed with the catalog's title,
// description, annotations and a schema without its fixed argument and
// with its default; a call is sent upstream as the upstream's tool with
// the fixed value and the default; a call that sends the fixed argument
// is refused -32602, unsent; the upstream's own name and a hidden tool
// are unknown; a prompt is renamed and described.
func TestCatalogCurates(t *testing.T) {
	testkit.Watchdog(t)
	u := startCuratedUpstream(t)
	srv, _ := mountCatalog(t, u, curatedFile, nil)
	c := mcptest.Connect(t, srv)

	tools := map[string]server.Tool{}
	for _, tool := range c.ListTools() {
		tools[tool.Name] = tool
	}
	assert.ElementsMatch(t, []string{"say", "other"}, keys(tools), "echo is served as say, secret is hidden")
	say := tools["say"]
	assert.Equal(t, "Say", say.Title)
	assert.Equal(t, "Repeats what you say.", say.Description)
	require.NotNil(t, say.Annotations)
	require.NotNil(t, say.Annotations.ReadOnlyHint)
	assert.True(t, *say.Annotations.ReadOnlyHint)
	assert.JSONEq(t, `{"type":"object","properties":{"message":{"type":"string","default":"hi"}}}`, string(say.InputSchema))

	assert.JSONEq(t, `{"message":"hi","tenant":"acme"}`, c.CallTool("say", map[string]any{}).Text())
	assert.JSONEq(t, `{"message":"yo","tenant":"acme"}`, c.CallTool("say", map[string]any{"message": "yo"}).Text())
	assert.JSONEq(t, `{"message":"yo","tenant":"acme"}`, u.lastArguments())

	_, rpcErr := c.Call("tools/call", map[string]any{"name": "say", "arguments": map[string]any{"tenant": "evil"}})
	require.NotNil(t, rpcErr, "the fixed argument sent is refused")
	assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code)
	assert.JSONEq(t, `{"message":"yo","tenant":"acme"}`, u.lastArguments(), "the refused call was not sent")

	for _, name := range []string{"echo", "secret"} {
		_, rpcErr := c.Call("tools/call", map[string]any{"name": name})
		require.NotNil(t, rpcErr, name)
		assert.Contains(t, rpcErr.Message, "unknown tool", name)
	}

	raw, rpcErr := c.Call("prompts/list", nil)
	require.Nil(t, rpcErr)
	assert.Contains(t, string(raw), `"name":"greet"`)
	assert.Contains(t, string(raw), `"description":"A greeting."`)
	assert.NotContains(t, string(raw), `"simple"`)
	_, rpcErr = c.Call("prompts/get", map[string]any{"name": "greet"})
	assert.Nil(t, rpcErr, "the renamed prompt is got as the upstream's")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestCatalogWithholdsWhatItCannotServe: a tool whose fixed argument is
// not in its schema is withheld, logged and counted once, the others
// served.
func TestCatalogWithholdsWhatItCannotServe(t *testing.T) {
	testkit.Watchdog(t)
	u := startCuratedUpstream(t)
	reg := prometheus.NewRegistry()
	srv, _ := mountCatalog(t, u, "upstreams:\n  up:\n    tools:\n      echo:\n        arguments:\n          nope: {fixed: 1}\n", reg)
	c := mcptest.Connect(t, srv)
	assert.ElementsMatch(t, []string{"other", "secret"}, toolNames(c))
	n, err := testutil.GatherAndCount(reg, "mcp_gateway_upstream_dropped_total")
	require.NoError(t, err)
	require.Positive(t, n)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var withheld float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == "withheld_tool" {
					withheld += m.GetCounter().GetValue()
				}
			}
		}
	}
	assert.InDelta(t, 1, withheld, 0)
}

// TestCatalogFileRefusedWithItsLine: each mistake is refused naming its
// line.
func TestCatalogFileRefusedWithItsLine(t *testing.T) {
	for file, want := range map[string]string{
		"upstreams:\n  up:\n    pins: warn\n":                                                                `line 3: unknown key "pins"`,
		"upstreams:\n  up:\n    pin: sometimes\n":                                                            `line 3: pin "sometimes"`,
		"upstreams:\n  up:\n    tools:\n      a: {name: x}\n      b: {name: x}\n":                            `line 5: tool b is served as "x"`,
		"upstreams:\n  up:\n    tools:\n      a:\n        arguments:\n          t: {fixed: 1, default: 2}\n": `line 6: argument t is both fixed and defaulted`,
		"endpoints:\n  e:\n    tools: [nope]\n":                                                              `line 3: tools: "nope"`,
		"endpoints:\n  e/x:\n    tools: [up/*]\n":                                                            `line 2: endpoint name`,
		"upstreams:\n  up:\n    tools:\n      a: {annotations: {readOnly: true}}\n":                          `line 4: annotations`,
		"upstreams: [\n": `line`,
	} {
		_, err := gateway.ParseCatalog([]byte(file))
		require.Error(t, err, file)
		assert.Contains(t, err.Error(), want, file)
	}
	cat, err := gateway.ParseCatalog([]byte("upstreams:\n  up: {}\n  elsewhere: {}\n"))
	require.NoError(t, err)
	_, err = gateway.Mount(t.Context(), server.New(), gateway.Config{Upstreams: []gateway.Upstream{{Name: "up", URL: "http://127.0.0.1:1"}}, Catalog: cat})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `line 3: upstream "elsewhere" is not one the gateway fronts`)
}

// TestCatalogReloadKeepsSessions: a new catalog is served to a session
// open before it, which is told list_changed; a catalog naming an
// upstream not fronted is refused and the one in force stays.
func TestCatalogReloadKeepsSessions(t *testing.T) {
	testkit.Watchdog(t)
	u := startCuratedUpstream(t)
	srv, g := mountCatalog(t, u, curatedFile, nil)
	c := mcptest.Connect(t, srv)
	require.Contains(t, toolNames(c), "say")

	bad, err := gateway.ParseCatalog([]byte("upstreams:\n  elsewhere: {}\n"))
	require.NoError(t, err)
	require.ErrorContains(t, g.SetCatalog(bad), "line 2")
	assert.JSONEq(t, `{"message":"hi","tenant":"acme"}`, c.CallTool("say", nil).Text(), "the catalog in force stays")

	next, err := gateway.ParseCatalog([]byte(strings.Replace(curatedFile, "Repeats what you say.", "Says it again.", 1)))
	require.NoError(t, err)
	require.NoError(t, g.SetCatalog(next))
	for {
		n := c.RecvRequest() // the session open before is told
		require.Contains(t, n.Method, "/list_changed")
		if n.Method == "notifications/tools/list_changed" {
			break
		}
	}
	var desc string
	for _, tool := range c.ListTools() {
		if tool.Name == "say" {
			desc = tool.Description
		}
	}
	assert.Equal(t, "Says it again.", desc)
	assert.JSONEq(t, `{"message":"hi","tenant":"acme"}`, c.CallTool("say", nil).Text(), "the same session calls on")
}

// TestCatalogEndpoints: each named endpoint lists and calls only the
// tools it selects, the default one all; a principal without an
// endpoint's scope is refused there 403 insufficient_scope.
func TestCatalogEndpoints(t *testing.T) {
	testkit.Watchdog(t)
	u := startCuratedUpstream(t)
	reg := prometheus.NewRegistry()
	srv, g := mountCatalog(t, u, curatedFile, reg)
	ep := streamable.New(srv)
	t.Cleanup(func() { _ = ep.Close() })
	scopes := map[string][]string{"Bearer reader": {"demo.read"}, "Bearer nobody": nil}
	withPrincipal := func(next http.Handler) http.Handler { // as the OAuth guard does
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := &auth.Principal{Subject: "s", Scopes: scopes[r.Header.Get("Authorization")]}
			next.ServeHTTP(w, r.WithContext(auth.ContextWithPrincipal(r.Context(), p)))
		})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", withPrincipal(ep))
	mux.Handle("/mcp/", withPrincipal(g.Endpoints(ep)))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	client := func(path, token string) *mcptest.Client {
		c := mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: ts.URL + path, Header: http.Header{"Authorization": {token}}}))
		c.Initialize("", nil)
		return c
	}

	assert.ElementsMatch(t, []string{"say", "other"}, toolNames(client("/mcp", "Bearer nobody")))
	demo := client("/mcp/demo", "Bearer reader")
	assert.Equal(t, []string{"say"}, toolNames(demo))
	assert.JSONEq(t, `{"message":"hi","tenant":"acme"}`, demo.CallTool("say", nil).Text())
	_, rpcErr := demo.Call("tools/call", map[string]any{"name": "other"})
	require.NotNil(t, rpcErr)
	assert.Contains(t, rpcErr.Message, "unknown tool")

	all := client("/mcp", "Bearer nobody")
	assert.Len(t, all.ListPrompts(), 1, "the default endpoint serves every prompt")
	assert.Len(t, all.ListResources(), 2, "and every resource")
	require.Len(t, demo.ListPrompts(), 1)
	assert.Equal(t, "greet", demo.ListPrompts()[0].Name, "the prompt selected by its own name")
	assert.Equal(t, "hi", demo.GetPrompt("greet", nil).Messages[0].Content.(*server.TextContent).Text)
	require.Len(t, demo.ListResources(), 1)
	assert.Equal(t, "note:a", demo.ListResources()[0].URI)
	assert.Equal(t, "note:a", demo.ReadResource("note:a")[0].Text)
	_, unknownRead := all.Call("resources/read", map[string]any{"uri": "note:nothing"})
	require.NotNil(t, unknownRead)
	_, rpcErr = demo.Call("resources/read", map[string]any{"uri": "note:b"})
	require.NotNil(t, rpcErr, "an unselected resource is not read")
	assert.Equal(t, unknownRead.Code, rpcErr.Code, "as a resource nothing serves")
	assert.Equal(t, unknownRead.Message, rpcErr.Message)

	others := client("/mcp/others", "Bearer nobody")
	assert.Equal(t, []string{"other"}, toolNames(others))
	assert.Empty(t, others.ListPrompts(), "an endpoint that selects no prompt serves none")
	assert.Empty(t, others.ListResources(), "nor resources")
	_, rpcErr = others.Call("prompts/get", map[string]any{"name": "greet"})
	require.NotNil(t, rpcErr)
	_, unknownPrompt := all.Call("prompts/get", map[string]any{"name": "nothing"})
	require.NotNil(t, unknownPrompt)
	assert.Equal(t, unknownPrompt.Code, rpcErr.Code, "as an unknown prompt")
	assert.Contains(t, rpcErr.Message, "unknown prompt")
	_, rpcErr = others.Call("resources/read", map[string]any{"uri": "note:a"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, unknownRead.Code, rpcErr.Code)
	_, rpcErr = others.Call("tools/call", map[string]any{"name": "say"})
	require.NotNil(t, rpcErr)
	assert.Contains(t, rpcErr.Message, "unknown tool")

	// resources/subscribe and completion/complete follow the selection
	// too: what the endpoint does not serve is refused as the unknown is.
	_, unknownSub := demo.Call("resources/subscribe", map[string]any{"uri": "note:nothing"})
	require.NotNil(t, unknownSub)
	_, rpcErr = demo.Call("resources/subscribe", map[string]any{"uri": "note:a"})
	assert.Nil(t, rpcErr, "a selected resource is subscribed to")
	_, rpcErr = all.Call("resources/subscribe", map[string]any{"uri": "note:b"})
	assert.Nil(t, rpcErr, "the default endpoint subscribes to every resource")
	_, rpcErr = demo.Call("resources/subscribe", map[string]any{"uri": "note:b"})
	require.NotNil(t, rpcErr, "an unselected resource is not subscribed to")
	assert.Equal(t, unknownSub.Code, rpcErr.Code)
	assert.Equal(t, unknownSub.Message, rpcErr.Message)
	complete := func(c *mcptest.Client, prompt string) *transport.Error {
		_, e := c.Call("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": prompt}, "argument": map[string]any{"name": "x", "value": ""}})
		return e
	}
	unknownComplete := complete(all, "nothing")
	require.NotNil(t, unknownComplete)
	rpcErr = complete(others, "greet")
	require.NotNil(t, rpcErr)
	assert.Equal(t, unknownComplete.Code, rpcErr.Code)
	assert.Equal(t, `completion/complete: unknown prompt: "greet"`, rpcErr.Message, "a prompt the endpoint does not serve is unknown to completion")
	assert.Nil(t, complete(demo, "greet"), "where it is served, the prompt completes")

	// The calls counter names the endpoint a call came through; the
	// default endpoint's calls have none.
	_ = all.CallTool("say", nil)
	want := map[string]float64{
		"mcp_gateway_upstream_calls_total{endpoint=demo,gen_ai_tool_name=echo,mcp_method_name=tools/call,outcome=ok,upstream=up}": 1,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=echo,mcp_method_name=tools/call,outcome=ok,upstream=up}":               1,
		"mcp_gateway_upstream_calls_total{endpoint=demo,mcp_method_name=prompts/get,outcome=ok,upstream=up}":                      1,
		"mcp_gateway_upstream_calls_total{endpoint=demo,mcp_method_name=resources/read,outcome=ok,upstream=up}":                   1,
	}
	assert.Equal(t, want, pick(gathered(t, reg), want))

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/mcp/demo", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer nobody")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusForbidden, res.StatusCode)
	assert.Contains(t, res.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)

	req.URL.Path = "/mcp/nowhere"
	req.Body = http.NoBody
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
}

// TestCatalogEndpointSearch: an endpoint with search: true lists
// search_tools and call_tool, which search and call only what it serves,
// while the default endpoint and another endpoint list their tools.
func TestCatalogEndpointSearch(t *testing.T) {
	testkit.Watchdog(t)
	u := startCuratedUpstream(t)
	file := strings.Replace(strings.Replace(curatedFile, "    scopes: [demo.read]\n", "    search: true\n", 1), `tools: ["up/oth*"]`, `tools: ["up/oth*", "up/echo"]`, 1)
	srv, g := mountCatalog(t, u, file, nil)
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

	assert.ElementsMatch(t, []string{"say", "other"}, toolNames(client("/mcp")), "the default endpoint lists its tools")
	assert.ElementsMatch(t, []string{"say", "other"}, toolNames(client("/mcp/others")), "so does an endpoint without search")
	demo := client("/mcp/demo")
	assert.Equal(t, []string{"search_tools", "call_tool"}, toolNames(demo), "the searching endpoint lists the two")
	res := demo.CallTool("search_tools", map[string]any{"query": "other say repeats", "limit": 10})
	require.False(t, res.IsError, res.Text())
	var out struct{ Tools []struct{ Name string } }
	require.NoError(t, json.Unmarshal([]byte(res.Text()), &out))
	require.Len(t, out.Tools, 1, "it searches only what the endpoint serves")
	assert.Equal(t, "say", out.Tools[0].Name)
	assert.JSONEq(t, `{"message":"hi","tenant":"acme"}`, demo.CallTool("call_tool", map[string]any{"name": "say"}).Text())
	_, rpcErr := demo.Call("tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "other"}})
	require.NotNil(t, rpcErr, "a tool the endpoint does not serve is not called")
	assert.Contains(t, rpcErr.Message, "unknown tool")
}
