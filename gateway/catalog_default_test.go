package gateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// scopedFile has two endpoints, each with a scope of its own, and says
// nothing of the default endpoint.
const scopedFile = `
endpoints:
  notes:
    tools: ["up/echo"]
    scopes: [notes.read]
  demo:
    tools: ["up/oth*"]
    scopes: [demo.use]
`

// catalogFront serves srv's MCP endpoint behind g.Endpoints at /mcp and
// /mcp/, with the principal of each token that tokens names (as the OAuth
// guard would).
func catalogFront(t *testing.T, g *gateway.Gateway, ep http.Handler, tokens map[string][]string) *httptest.Server {
	t.Helper()
	withPrincipal := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := &auth.Principal{Subject: "s", Scopes: tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]}
			next.ServeHTTP(w, r.WithContext(auth.ContextWithPrincipal(r.Context(), p)))
		})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", withPrincipal(g.Endpoints(ep)))
	mux.Handle("/mcp/", withPrincipal(g.Endpoints(ep)))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// postStatus posts an MCP message to url with token (and session, when
// not empty) and returns the answer's status and WWW-Authenticate.
func postStatus(t *testing.T, url, token, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	return res.StatusCode, res.Header.Get("WWW-Authenticate")
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestCatalogDefaultEndpointOffBesideScopes: a catalog whose endpoints
// have scopes and that says nothing of the default endpoint serves
// nothing there: /mcp answers 404 to any token, a session opened at an
// endpoint gets 404 when it sends its requests to /mcp, a caller over a
// connection of no endpoint (stdio) lists and calls nothing; a token of
// one endpoint's scope lists and calls that endpoint's tools and is
// refused 403 at the other.
func TestCatalogDefaultEndpointOffBesideScopes(t *testing.T) {
	testkit.Watchdog(t)
	u := startCuratedUpstream(t)
	srv, g := mountCatalog(t, u, scopedFile, nil)
	ep := streamable.New(srv)
	t.Cleanup(func() { _ = ep.Close() })
	ts := catalogFront(t, g, ep, map[string][]string{"notes": {"notes.read"}, "other": {"unrelated"}})

	for _, token := range []string{"notes", "other"} {
		status, _ := postStatus(t, ts.URL+"/mcp", token, "", initializeBody)
		assert.Equal(t, http.StatusNotFound, status, "%s's token at /mcp", token)
		status, _ = postStatus(t, ts.URL+"/mcp/demo", token, "", initializeBody)
		assert.Equal(t, http.StatusForbidden, status, "%s's token at /mcp/demo", token)
	}
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/mcp", nil)
	require.NoError(t, err)
	assert.Empty(t, g.EndpointScopes(req), "the default endpoint, off, needs no scope of the guard: it is refused after it")

	notes := mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: ts.URL + "/mcp/notes", Header: http.Header{"Authorization": {"Bearer notes"}}}))
	notes.Initialize("", nil)
	assert.Equal(t, []string{"echo"}, toolNames(notes))
	assert.JSONEq(t, `{"tenant":"t"}`, notes.CallTool("echo", map[string]any{"tenant": "t"}).Text())
	_, rpcErr := notes.Call("tools/call", map[string]any{"name": "other"})
	require.NotNil(t, rpcErr)
	assert.Contains(t, rpcErr.Message, "unknown tool")

	// The notes session's id, sent to /mcp: refused there as any request.
	res, err := http.Post(ts.URL+"/mcp/notes", "application/json", strings.NewReader(initializeBody)) //nolint:noctx // a test's request
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode, "no token: no scope")
	session := sessionOf(t, ts.URL+"/mcp/notes", "notes")
	status, _ := postStatus(t, ts.URL+"/mcp", "notes", session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	assert.Equal(t, http.StatusNotFound, status, "a session of /mcp/notes at /mcp")
	status, _ = postStatus(t, ts.URL+"/mcp/notes", "notes", session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	assert.Equal(t, http.StatusOK, status, "and at its own endpoint")

	stdio := mcptest.Connect(t, srv) // no endpoint: the default one
	assert.Empty(t, toolNames(stdio), "the default endpoint lists nothing")
	_, rpcErr = stdio.Call("tools/call", map[string]any{"name": "other"})
	require.NotNil(t, rpcErr)
	assert.Contains(t, rpcErr.Message, "unknown tool")
	assert.Empty(t, stdio.ListPrompts())
	assert.Empty(t, stdio.ListResources())
}

// sessionOf initializes a session at url with token and returns its id.
func sessionOf(t *testing.T, url, token string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initializeBody))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	id := res.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, id)
	status, _ := postStatus(t, url, token, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.Equal(t, http.StatusAccepted, status)
	return id
}

// TestCatalogDefaultEndpointSelects: a catalog's default key with an
// endpoint's fields confines /mcp (and stdio) as a named endpoint is: a
// token without its scope is refused 403 naming it; with it, the caller
// lists, searches and calls (call_tool, tools/call) only the tools it
// selects.
func TestCatalogDefaultEndpointSelects(t *testing.T) {
	testkit.Watchdog(t)
	u := startCuratedUpstream(t)
	file := scopedFile + "default:\n  tools: [\"up/other\"]\n  scopes: [admin]\n  search: true\n"
	srv, g := mountCatalog(t, u, file, nil)
	ep := streamable.New(srv)
	t.Cleanup(func() { _ = ep.Close() })
	ts := catalogFront(t, g, ep, map[string][]string{"notes": {"notes.read"}, "admin": {"admin"}})

	status, challenge := postStatus(t, ts.URL+"/mcp", "notes", "", initializeBody)
	assert.Equal(t, http.StatusForbidden, status, "notes.read's token at /mcp")
	assert.Contains(t, challenge, `error="insufficient_scope", scope="admin"`)
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/mcp", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"admin"}, g.EndpointScopes(req), "the guard's scopes of /mcp")

	for name, c := range map[string]*mcptest.Client{
		"/mcp":  mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: ts.URL + "/mcp", Header: http.Header{"Authorization": {"Bearer admin"}}})),
		"stdio": mcptest.Pipe(t, srv),
	} {
		c.Initialize("", nil)
		assert.Equal(t, []string{"search_tools", "call_tool"}, toolNames(c), name)
		res := c.CallTool("search_tools", map[string]any{"query": "other echo say", "limit": 10})
		require.False(t, res.IsError, res.Text())
		var out struct{ Tools []struct{ Name string } }
		require.NoError(t, json.Unmarshal([]byte(res.Text()), &out))
		require.Len(t, out.Tools, 1, "%s: it searches only what the default endpoint serves", name)
		assert.Equal(t, "other", out.Tools[0].Name, name)
		assert.Equal(t, "other", c.CallTool("call_tool", map[string]any{"name": "other"}).Text(), name)
		_, rpcErr := c.Call("tools/call", map[string]any{"name": "call_tool", "arguments": map[string]any{"name": "echo", "arguments": map[string]any{"tenant": "t"}}})
		require.NotNil(t, rpcErr, "%s: call_tool of a tool the default endpoint does not serve", name)
		assert.Contains(t, rpcErr.Message, "unknown tool", name)
		_, rpcErr = c.Call("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"tenant": "t"}})
		require.NotNil(t, rpcErr, "%s: tools/call of it", name)
		assert.Contains(t, rpcErr.Message, "unknown tool", name)
	}
}

// TestCatalogDefaultKey: default is all, off or an endpoint's mapping;
// off alone turns /mcp off, all keeps it serving everything beside
// scoped endpoints; another value is refused with its line.
func TestCatalogDefaultKey(t *testing.T) {
	testkit.Watchdog(t)
	_, err := gateway.ParseCatalog([]byte("default: maybe\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 1: default: want all, off or an endpoint's mapping")
	_, err = gateway.ParseCatalog([]byte("default:\n  tools: [\"up/x\"]\n  nope: 1\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `line 3: unknown key "nope"`)

	u := startCuratedUpstream(t)
	_, g := mountCatalog(t, u, "default: off\n", nil)
	ts := catalogFront(t, g, http.NotFoundHandler(), nil)
	status, _ := postStatus(t, ts.URL+"/mcp", "", "", initializeBody)
	assert.Equal(t, http.StatusNotFound, status, "default: off")

	srv, _ := mountCatalog(t, u, scopedFile+"default: all\n", nil)
	assert.ElementsMatch(t, []string{"echo", "other", "secret"}, toolNames(mcptest.Connect(t, srv)), "default: all serves everything beside scoped endpoints")

	// Off for want of the key, beside scoped endpoints: logged at mount
	// and at each reload, which the explicit key is not.
	var logs syncBuffer
	implied, err := gateway.ParseCatalog([]byte(scopedFile))
	require.NoError(t, err)
	quiet := server.New()
	t.Cleanup(func() { _ = quiet.Close() })
	g, err = gateway.Mount(t.Context(), quiet, gateway.Config{Upstreams: []gateway.Upstream{{Name: "up", URL: u.url}}, Catalog: implied, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	const said = "/mcp (and stdio) serves nothing"
	assert.Equal(t, 1, strings.Count(logs.String(), said), logs.String())
	explicit, err := gateway.ParseCatalog([]byte(scopedFile + "default: off\n"))
	require.NoError(t, err)
	require.NoError(t, g.SetCatalog(explicit))
	require.NoError(t, g.SetCatalog(implied))
	assert.Equal(t, 2, strings.Count(logs.String(), said), "the reload of the implied one is logged, the explicit one not: %s", logs.String())
}

// TestCatalogEndpointTasksConfined: a tool an endpoint does not select
// is not called as a task there either (tools/call with task is a call
// of an unknown tool), nor at the default endpoint beside scoped ones;
// where it is selected, its task runs and gives its result.
func TestCatalogEndpointTasksConfined(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "up")
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "job", Execution: &server.ToolExecution{TaskSupport: server.TaskSupportOptional}},
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("job done"), nil
		}))
	cat, err := gateway.ParseCatalog([]byte("endpoints:\n  notes:\n    tools: [\"up/hello\"]\n    scopes: [notes.read]\n  jobs:\n    tools: [\"up/job\"]\n    scopes: [jobs.run]\n"))
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
	ts := catalogFront(t, g, ep, map[string][]string{"notes": {"notes.read"}, "jobs": {"jobs.run"}})
	client := func(path, token string) *mcptest.Client {
		c := mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: ts.URL + path, Header: http.Header{"Authorization": {"Bearer " + token}}}))
		c.Initialize("", nil)
		return c
	}
	asTask := map[string]any{"name": "job", "task": map[string]any{}}

	for name, c := range map[string]*mcptest.Client{"/mcp/notes": client("/mcp/notes", "notes"), "stdio": mcptest.Connect(t, srv)} {
		_, rpcErr := c.Call("tools/call", asTask)
		require.NotNil(t, rpcErr, "%s: job as a task", name)
		assert.Contains(t, rpcErr.Message, "unknown tool", name)
	}

	jobs := client("/mcp/jobs", "jobs")
	raw, rpcErr := jobs.Call("tools/call", asTask)
	require.Nil(t, rpcErr, "%v", rpcErr)
	var created struct{ Task struct{ TaskID string } }
	require.NoError(t, json.Unmarshal(raw, &created))
	require.NotEmpty(t, created.Task.TaskID, "%s", raw)
	raw, rpcErr = jobs.Call("tasks/result", map[string]string{"taskId": created.Task.TaskID})
	require.Nil(t, rpcErr, "%v", rpcErr)
	assert.Contains(t, string(raw), "job done")
}
