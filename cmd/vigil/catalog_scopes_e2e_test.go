package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endpointScopesCatalog has two endpoints that serve the same upstream's
// tools, each to the holders of its own scope.
const endpointScopesCatalog = `endpoints:
  red:
    tools: ["u/*"]
    scopes: [team.red]
  blue:
    tools: ["u/*"]
    scopes: [team.blue]
`

// TestCatalogEndpointScopes: behind vigil's OAuth guard (-auth-issuer,
// JWTs of a real authorization server, oidc-provider), a token with
// team.red's scope lists and calls at /mcp/red and is refused at
// /mcp/blue by the guard itself: 403, the challenge naming the scope the
// request needs and the metadata (resource_metadata), the refusal
// counted as insufficient_scope; a token with team.blue works there; a
// request without a token is refused 401 naming the endpoint's scope.
// The calls counter and the request duration name the endpoint each
// call came through; the metadata's scopes_supported lists the
// endpoints' scopes.
func TestCatalogEndpointScopes(t *testing.T) {
	up := startRecordingUpstream(t)
	port := authResource(t)
	as := startOIDCProvider(t, oidcOptions{Resource: port.resource, Scopes: []string{"team.red", "team.blue"}})
	file := filepath.Join(t.TempDir(), "catalog.yaml")
	require.NoError(t, os.WriteFile(file, []byte(endpointScopesCatalog), 0o600))
	v := startVigilAuth(t, port, as.Issuer(), nil, "-catalog", file, "-upstream", "u="+up.url)
	base := strings.TrimSuffix(v.url, "/mcp")
	red, blue := as.Token(t, "team.red"), as.Token(t, "team.blue")
	post := func(path, token, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := v.hc.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	session := func(path, token string) *svcClient {
		hc := &http.Client{Transport: bearer{token: token, base: v.hc.Transport}, Timeout: 10 * time.Second}
		c := &svcClient{hc: hc, url: base + path}
		m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		require.NoError(t, c.notify("notifications/initialized"))
		return c
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	metadata := base + "/.well-known/oauth-protected-resource/mcp"

	for _, c := range []struct{ path, token string }{{"/mcp/red", red}, {"/mcp/blue", blue}} {
		s := session(c.path, c.token)
		m, err := s.rpc("2", "tools/call", `{"name":"hello"}`)
		require.NoError(t, err)
		require.Nil(t, m.Error, "%s: %s", c.path, m.Error)
		assert.Contains(t, string(m.Result), "hello from upstream")
	}

	resp := post("/mcp/blue", red, initialize)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "team.red's token at blue")
	challenge := resp.Header.Get("WWW-Authenticate")
	assert.Contains(t, challenge, `Bearer error="insufficient_scope", scope="team.blue", resource_metadata="`+metadata+`"`)
	assert.Equal(t, http.StatusForbidden, post("/mcp/red", blue, initialize).StatusCode, "and team.blue's at red")

	resp = post("/mcp/red", "", initialize)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, `Bearer scope="team.red", resource_metadata="`+metadata+`"`, resp.Header.Get("WWW-Authenticate"),
		"the challenge of a request without a token names the scope the endpoint needs")

	var prm struct {
		ScopesSupported []string `json:"scopes_supported"`
	}
	require.NoError(t, json.Unmarshal([]byte(debugBody(t, v.hc, metadata)), &prm))
	assert.Equal(t, []string{"team.blue", "team.red"}, prm.ScopesSupported, "the metadata advertises the endpoints' scopes")

	metrics := debugBody(t, v.hc, base+"/metrics")
	assert.Contains(t, metrics, `mcp_server_auth_failures_total{reason="insufficient_scope"} 2`, "the guard counted both refusals")
	assert.Contains(t, metrics, `mcp_gateway_upstream_calls_total{endpoint="red",gen_ai_tool_name="hello",mcp_method_name="tools/call",outcome="ok",upstream="u"} 1`)
	assert.Contains(t, metrics, `mcp_gateway_upstream_calls_total{endpoint="blue",gen_ai_tool_name="hello",mcp_method_name="tools/call",outcome="ok",upstream="u"} 1`)
	assert.Contains(t, metrics, `mcp_gateway_upstream_calls_total{endpoint="",gen_ai_tool_name="hello",mcp_method_name="tools/call",outcome="ok",upstream="u"} 0`,
		"no call came through /mcp")
	for _, e := range []string{"red", "blue"} {
		assert.Regexp(t, `(?m)^mcp_server_operation_duration_seconds_count\{endpoint="`+e+`",error_type="",gen_ai_tool_name="hello",mcp_method_name="tools/call",[^}]*\} 1$`, metrics,
			"the request duration names the endpoint the call came through")
	}
	assert.NotRegexp(t, `(?m)^mcp_server_operation_duration_seconds_count\{endpoint="",[^}]*gen_ai_tool_name="hello"[^}]*\} [1-9]`, metrics, "none through /mcp")
	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// partnerCatalog serves the upstreams notes and demo at endpoints of
// their own, each to the holders of its scope, and says nothing of the
// default endpoint.
const partnerCatalog = `endpoints:
  notes:
    tools: ["notes/*"]
    scopes: [notes.read]
  demo:
    tools: ["demo/*"]
    scopes: [demo.use]
    search: true
`

// TestCatalogDefaultEndpointConfined: behind vigil's OAuth guard, with
// tokens of a real authorization server (oidc-provider), a token of one
// endpoint's scope reaches only that endpoint's tools by every path. With
// the catalog silent on the default endpoint, /mcp answers 404 to every
// token, and to a session opened at /mcp/notes that sends its requests
// there; notes.read's token lists and calls the notes tool at
// /mcp/notes, in either era, and not the demo one (tools/call or the
// search endpoint's call_tool); it and an unrelated scope's token are
// refused 403 at the endpoints of other scopes. Reloaded with a default
// of its own (the notes tool, scope admin), /mcp refuses notes.read's
// token 403 through the guard, naming admin, and serves an admin token
// only its selection.
func TestCatalogDefaultEndpointConfined(t *testing.T) {
	notesUp, demoUp := startRecordingUpstream(t), startRecordingUpstream(t)
	port := authResource(t)
	as := startOIDCProvider(t, oidcOptions{Resource: port.resource, Scopes: []string{"notes.read", "demo.use", "unrelated", "admin"}})
	file := filepath.Join(t.TempDir(), "catalog.yaml")
	require.NoError(t, os.WriteFile(file, []byte(partnerCatalog), 0o600))
	v := startVigilAuth(t, port, as.Issuer(), nil, "-catalog", file, "-upstream", "notes="+notesUp.url, "-upstream", "demo="+demoUp.url)
	base := strings.TrimSuffix(v.url, "/mcp")
	notes, demo, other, admin := as.Token(t, "notes.read"), as.Token(t, "demo.use"), as.Token(t, "unrelated"), as.Token(t, "admin")
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(path, token string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+path, strings.NewReader(initialize))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := v.hc.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	client := func(path, token string, modern bool) *svcClient {
		hc := &http.Client{Transport: bearer{token: token, base: v.hc.Transport}, Timeout: 10 * time.Second}
		return &svcClient{hc: hc, url: base + path, modern: modern}
	}
	session := func(path, token string) *svcClient {
		c := client(path, token, false)
		m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		require.NoError(t, c.notify("notifications/initialized"))
		return c
	}
	tools := func(c *svcClient) []string {
		m, err := c.rpc("2", "tools/list", `{}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		var l struct{ Tools []struct{ Name string } }
		require.NoError(t, json.Unmarshal(m.Result, &l))
		var names []string
		for _, tool := range l.Tools {
			names = append(names, tool.Name)
		}
		return names
	}
	call := func(c *svcClient, name string) svcMessage {
		m, err := c.rpc("3", "tools/call", `{"name":"`+name+`","arguments":{}}`)
		require.NoError(t, err)
		return m
	}

	for _, tok := range []struct{ name, token string }{{"notes.read", notes}, {"unrelated", other}} {
		assert.Equal(t, http.StatusNotFound, post("/mcp", tok.token).StatusCode, "%s's token at /mcp", tok.name)
		assert.Equal(t, http.StatusForbidden, post("/mcp/demo", tok.token).StatusCode, "%s's token at /mcp/demo", tok.name)
	}
	assert.Equal(t, http.StatusForbidden, post("/mcp/notes", other).StatusCode, "unrelated's token at /mcp/notes")

	for _, modern := range []bool{false, true} {
		var c *svcClient
		if modern {
			c = client("/mcp/notes", notes, true)
		} else {
			c = session("/mcp/notes", notes)
		}
		assert.Equal(t, []string{"notes_hello"}, tools(c), "modern %v", modern)
		m := call(c, "notes_hello")
		require.Nil(t, m.Error, "modern %v: %v", modern, m.Error)
		assert.Contains(t, string(m.Result), "hello from upstream")
		m = call(c, "demo_hello")
		require.NotNil(t, m.Error, "modern %v", modern)
		assert.Contains(t, m.Error.Message, "unknown tool")
	}
	opened := session("/mcp/notes", notes)
	hop := &svcClient{hc: opened.hc, url: base + "/mcp", session: opened.session}
	_, err := hop.rpc("4", "tools/list", `{}`)
	require.Error(t, err, "the notes session at /mcp")
	assert.Contains(t, err.Error(), "404")

	searching := session("/mcp/demo", demo)
	assert.Equal(t, []string{"search_tools", "call_tool"}, tools(searching))
	m, err := searching.rpc("5", "tools/call", `{"name":"call_tool","arguments":{"name":"notes_hello"}}`)
	require.NoError(t, err)
	require.NotNil(t, m.Error, "call_tool of the notes tool at demo")
	assert.Contains(t, m.Error.Message, "unknown tool")
	m, err = searching.rpc("6", "tools/call", `{"name":"call_tool","arguments":{"name":"demo_hello"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error, "call_tool of its own: %v", m.Error)

	require.NoError(t, os.WriteFile(file, []byte(partnerCatalog+"default:\n  tools: [\"notes/*\"]\n  scopes: [admin]\n"), 0o600))
	require.NoError(t, syscall.Kill(v.proc.cmd.Process.Pid, syscall.SIGHUP))
	require.True(t, v.logs.waitFor("catalog reloaded", 30*time.Second), "the catalog is reloaded")
	resp := post("/mcp", notes)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "notes.read's token at /mcp, whose default needs admin")
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `Bearer error="insufficient_scope", scope="admin", resource_metadata="`, "the guard's own challenge")
	resp = post("/mcp", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `scope="admin"`)
	root := session("/mcp", admin)
	assert.Equal(t, []string{"notes_hello"}, tools(root))
	m = call(root, "demo_hello")
	require.NotNil(t, m.Error)
	assert.Contains(t, m.Error.Message, "unknown tool")
	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}
