package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

const dashboardURI = "ui://weather/dashboard"

// uiCaps are client capabilities that declare MCP Apps.
var uiCaps = map[string]any{"extensions": map[string]any{server.ExtensionUI: map[string]any{"mimeTypes": []string{server.ViewMIMEType}}}}

// appsServer has a view and four tools: "weather" (linked to the view,
// answering structured content only), "refresh" (app-only), "dashboard"
// (RequireUI) and "plain" (no view).
func appsServer(t *testing.T) *server.Server {
	t.Helper()
	srv := server.New()
	border := true
	require.NoError(t, srv.AddView(server.View{
		URI: dashboardURI, Name: "dashboard", Title: "Weather dashboard",
		HTML: []byte("<!doctype html><p>sunny</p>"),
		UI: server.ViewUI{
			CSP: &server.ViewCSP{
				ConnectDomains: []string{"https://api.example.com", "wss://live.example.com"}, ResourceDomains: []string{"https://*.cdn.example.com:8443"},
				FrameDomains: []string{"https://player.example.com"}, BaseURIDomains: []string{"https://cdn.example.com"},
			},
			Permissions:   []string{"camera", "clipboardWrite"},
			Domain:        "weather.sandbox.example.com",
			PrefersBorder: &border,
		},
	}))
	structured := func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return &server.CallToolResult{StructuredContent: map[string]any{"sky": "sunny"}}, nil
	}
	require.NoError(t, srv.AddTool(server.Tool{Name: "weather", Meta: server.Meta{"other": 1}, UI: &server.ToolUI{ResourceURI: dashboardURI}}, structured))
	require.NoError(t, srv.AddTool(server.Tool{Name: "refresh", UI: &server.ToolUI{ResourceURI: dashboardURI, Visibility: []string{"app"}}}, structured))
	require.NoError(t, srv.AddTool(server.Tool{Name: "dashboard", UI: &server.ToolUI{ResourceURI: dashboardURI, Visibility: []string{"model", "app"}, RequireUI: true}}, structured))
	require.NoError(t, srv.AddTool(server.Tool{Name: "plain"}, structured))
	return srv
}

// caller sends one request and returns its result or error.
type caller func(method string, params map[string]any) (json.RawMessage, *transport.Error)

type uiListedTool struct {
	Name string                     `json:"name"`
	Meta map[string]json.RawMessage `json:"_meta"`
}

func listUITools(t *testing.T, call caller) map[string]uiListedTool {
	t.Helper()
	raw, rpcErr := call("tools/list", map[string]any{})
	require.Nil(t, rpcErr)
	var res struct{ Tools []uiListedTool }
	require.NoError(t, json.Unmarshal(raw, &res), "%s", raw)
	byName := map[string]uiListedTool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	return byName
}

// checkWithUI asserts what a client that declared MCP Apps sees: every
// tool, those with a view carrying _meta.ui; the view reads back with its
// MIME type and _meta.ui; a structured-only result gets a text fallback.
func checkWithUI(t *testing.T, call caller) {
	t.Helper()
	tools := listUITools(t, call)
	require.ElementsMatch(t, []string{"dashboard", "plain", "refresh", "weather"}, slices.Collect(maps.Keys(tools)))
	assert.JSONEq(t, `{"resourceUri":"ui://weather/dashboard"}`, string(tools["weather"].Meta["ui"]))
	assert.JSONEq(t, `1`, string(tools["weather"].Meta["other"]), "the tool's own _meta stays")
	assert.JSONEq(t, `"ui://weather/dashboard"`, string(tools["weather"].Meta["ui/resourceUri"]), "the deprecated flat key too")
	assert.JSONEq(t, `{"resourceUri":"ui://weather/dashboard","visibility":["app"]}`, string(tools["refresh"].Meta["ui"]))
	assert.Contains(t, tools, "dashboard")
	assert.NotContains(t, tools["plain"].Meta, "ui")

	raw, rpcErr := call("resources/read", map[string]any{"uri": dashboardURI})
	require.Nil(t, rpcErr)
	var read struct {
		Contents []struct {
			URI      string                     `json:"uri"`
			MIMEType string                     `json:"mimeType"`
			Text     string                     `json:"text"`
			Meta     map[string]json.RawMessage `json:"_meta"`
		} `json:"contents"`
	}
	require.NoError(t, json.Unmarshal(raw, &read), "%s", raw)
	require.Len(t, read.Contents, 1)
	c := read.Contents[0]
	assert.Equal(t, dashboardURI, c.URI)
	assert.Equal(t, "text/html;profile=mcp-app", c.MIMEType)
	assert.Equal(t, "<!doctype html><p>sunny</p>", c.Text)
	assert.JSONEq(t, `{
		"csp":{"connectDomains":["https://api.example.com","wss://live.example.com"],"resourceDomains":["https://*.cdn.example.com:8443"],
			"frameDomains":["https://player.example.com"],"baseUriDomains":["https://cdn.example.com"]},
		"permissions":{"camera":{},"clipboardWrite":{}},
		"domain":"weather.sandbox.example.com",
		"prefersBorder":true}`, string(c.Meta["ui"]))

	raw, rpcErr = call("tools/call", map[string]any{"name": "dashboard", "arguments": map[string]any{}})
	require.Nil(t, rpcErr)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"{\"sky\":\"sunny\"}"}],"structuredContent":{"sky":"sunny"}}`,
		stripResultType(t, raw), "a tool with a view answers text besides its structured content")
}

// checkWithoutUI asserts the fallback for a client that did not declare
// MCP Apps: plain tools without _meta.ui, hidden app-only and RequireUI
// tools, which also cannot be called.
func checkWithoutUI(t *testing.T, call caller) {
	t.Helper()
	tools := listUITools(t, call)
	require.ElementsMatch(t, []string{"plain", "weather"}, slices.Collect(maps.Keys(tools)), "refresh (app-only) and dashboard (RequireUI) are hidden")
	require.Contains(t, tools, "weather")
	assert.NotContains(t, tools["weather"].Meta, "ui")
	assert.NotContains(t, tools["weather"].Meta, "ui/resourceUri")
	assert.JSONEq(t, `1`, string(tools["weather"].Meta["other"]))
	assert.Contains(t, tools, "plain")

	for _, name := range []string{"dashboard", "refresh"} {
		_, rpcErr := call("tools/call", map[string]any{"name": name, "arguments": map[string]any{}})
		require.NotNil(t, rpcErr, name)
		assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code, name)
		assert.Contains(t, rpcErr.Message, "unknown tool", name)
	}
	raw, rpcErr := call("tools/call", map[string]any{"name": "weather", "arguments": map[string]any{}})
	require.Nil(t, rpcErr)
	assert.Contains(t, string(raw), `"text":"{\"sky\":\"sunny\"}"`)
}

// stripResultType drops a 2026-07-28 result's resultType and _meta (the
// server's info), to compare the rest across eras.
func stripResultType(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	delete(m, "resultType")
	delete(m, "_meta")
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

func pipeCaller(c *mcptest.Client) caller {
	return func(method string, params map[string]any) (json.RawMessage, *transport.Error) {
		return c.Call(method, params)
	}
}

// TestViewsInSessions: the capability, listing, reading and fallback in
// 2025 sessions, with and without the extension (a wrong MIME type, or a
// malformed declaration, counts as without).
func TestViewsInSessions(t *testing.T) {
	testkit.Watchdog(t)
	srv := appsServer(t)

	c := mcptest.Pipe(t, srv)
	init := c.Initialize("", uiCaps)
	assert.Contains(t, string(init.Capabilities), `"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}`)
	checkWithUI(t, pipeCaller(c))

	checkWithoutUI(t, pipeCaller(mcptest.Connect(t, srv)))
	other := map[string]any{"extensions": map[string]any{server.ExtensionUI: map[string]any{"mimeTypes": []string{"text/html"}}}}
	checkWithoutUI(t, pipeCaller(mcptest.Connect(t, srv, mcptest.WithCapabilities(other))))
	for _, odd := range []any{true, "yes", map[string]any{"mimeTypes": "text/html;profile=mcp-app"}, map[string]any{"mimeTypes": []any{1, nil}}} {
		caps := map[string]any{"extensions": map[string]any{server.ExtensionUI: odd}}
		checkWithoutUI(t, pipeCaller(mcptest.Connect(t, srv, mcptest.WithCapabilities(caps))))
	}
	spaced := map[string]any{"extensions": map[string]any{server.ExtensionUI: map[string]any{"mimeTypes": []string{"Text/HTML; profile=mcp-app"}}}}
	checkWithUI(t, pipeCaller(mcptest.Connect(t, srv, mcptest.WithCapabilities(spaced))))
}

// TestNoViewNoExtension: without a view the server does not declare the
// extension.
func TestNoViewNoExtension(t *testing.T) {
	testkit.Watchdog(t)
	srv := server.New()
	require.NoError(t, srv.AddResource(server.Resource{URI: "file:///a", Name: "a"}, func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return &server.ReadResourceResult{}, nil
	}))
	init := mcptest.Pipe(t, srv).Initialize("", uiCaps)
	assert.NotContains(t, string(init.Capabilities), server.ExtensionUI)
}

// TestViewsOverHTTP runs the same checks over Streamable HTTP: a 2025
// session, and 2026-07-28 stateless requests whose per-request client
// capabilities declare the extension or not.
func TestViewsOverHTTP(t *testing.T) {
	testkit.Watchdog(t)
	srv := appsServer(t)
	h := streamable.New(srv)
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
		_ = srv.Close()
	})

	t.Run("2025 session", func(t *testing.T) {
		c := mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: ts.URL}))
		c.Initialize("", uiCaps)
		checkWithUI(t, pipeCaller(c))
		c = mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: ts.URL}))
		c.Initialize("", nil)
		checkWithoutUI(t, pipeCaller(c))
	})
	t.Run("2026-07-28", func(t *testing.T) {
		raw, rpcErr := post2026(t, ts.URL, map[string]any{})("server/discover", map[string]any{})
		require.Nil(t, rpcErr)
		assert.Contains(t, string(raw), `"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}`)
		checkWithUI(t, post2026(t, ts.URL, uiCaps))
		checkWithoutUI(t, post2026(t, ts.URL, map[string]any{}))
	})
}

// post2026 returns a caller that POSTs each request as a 2026-07-28
// stateless request declaring caps.
func post2026(t *testing.T, url string, caps map[string]any) caller {
	return func(method string, params map[string]any) (json.RawMessage, *transport.Error) {
		t.Helper()
		params["_meta"] = meta2026(caps)
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", protocol.Version20260728)
		req.Header.Set("Mcp-Method", method)
		if name, ok := params["name"].(string); ok {
			req.Header.Set("Mcp-Name", name)
		} else if uri, ok := params["uri"].(string); ok {
			req.Header.Set("Mcp-Name", uri)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					data = []byte(d)
				}
			}
		}
		var msg struct {
			Result json.RawMessage  `json:"result"`
			Error  *transport.Error `json:"error"`
		}
		require.NoError(t, json.Unmarshal(data, &msg), "%d %s", resp.StatusCode, data)
		return msg.Result, msg.Error
	}
}

// TestViewValidation: bad views and bad links are registration errors,
// and register nothing.
func TestViewValidation(t *testing.T) {
	t.Parallel()
	page := []byte("<!doctype html>")
	ok := server.View{URI: "ui://app/view", Name: "view", HTML: page}
	views := []struct {
		name string
		edit func(v *server.View)
		want string
	}{
		{"not ui scheme", func(v *server.View) { v.URI = "https://app/view" }, "must start with ui://"},
		{"opaque", func(v *server.View) { v.URI = "ui:view" }, "must start with ui://"},
		{"upper-case scheme", func(v *server.View) { v.URI = "UI://app/view" }, "must start with ui://"},
		{"no host", func(v *server.View) { v.URI = "ui:///view" }, "ui://host[/path]"},
		{"query", func(v *server.View) { v.URI = "ui://app/view?x=1" }, "ui://host[/path]"},
		{"fragment", func(v *server.View) { v.URI = "ui://app/view#x" }, "ui://host[/path]"},
		{"no name", func(v *server.View) { v.Name = "" }, "empty name"},
		{"no page", func(v *server.View) { v.HTML = nil }, "empty page"},
		{"unknown permission", func(v *server.View) { v.UI.Permissions = []string{"camera", "usb"} }, `unknown permission "usb"`},
		{"domain with path", func(v *server.View) {
			v.UI.CSP = &server.ViewCSP{ConnectDomains: []string{"https://api.example.com/v1"}}
		}, "connectDomains"},
		{"domain without scheme", func(v *server.View) { v.UI.CSP = &server.ViewCSP{ResourceDomains: []string{"cdn.example.com"}} }, "resourceDomains"},
		{"domain breaking the CSP", func(v *server.View) {
			v.UI.CSP = &server.ViewCSP{FrameDomains: []string{"https://a.com; script-src *"}}
		}, "frameDomains"},
		{"file scheme", func(v *server.View) { v.UI.CSP = &server.ViewCSP{BaseURIDomains: []string{"file://x"}} }, "baseUriDomains"},
		{"bare wildcard", func(v *server.View) { v.UI.CSP = &server.ViewCSP{ConnectDomains: []string{"https://*"}} }, "connectDomains"},
		{"inner wildcard", func(v *server.View) { v.UI.CSP = &server.ViewCSP{ConnectDomains: []string{"https://a.*.com"}} }, "connectDomains"},
		{"bad port", func(v *server.View) { v.UI.CSP = &server.ViewCSP{ConnectDomains: []string{"https://a.com:99999"}} }, "connectDomains"},
		{"userinfo", func(v *server.View) { v.UI.CSP = &server.ViewCSP{ConnectDomains: []string{"https://u@a.com"}} }, "connectDomains"},
		{"sandbox domain with scheme", func(v *server.View) { v.UI.Domain = "https://x.example.com" }, "domain"},
	}
	for _, tc := range views {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := server.New()
			v := ok
			tc.edit(&v)
			err := srv.AddView(v)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			_, rpcErr := mcptest.Connect(t, srv).Call("resources/list", nil)
			require.NotNil(t, rpcErr, "nothing registered: resources are not declared")
			assert.Equal(t, int64(protocol.CodeMethodNotFound), rpcErr.Code)
		})
	}

	tools := []struct {
		name string
		tool server.Tool
		want string
	}{
		{"no such view", server.Tool{Name: "t", UI: &server.ToolUI{ResourceURI: "ui://app/other"}}, "no view"},
		{"not a ui URI", server.Tool{Name: "t", UI: &server.ToolUI{ResourceURI: "file:///x"}}, "ui://"},
		{"a plain resource", server.Tool{Name: "t", UI: &server.ToolUI{ResourceURI: "ui://app/plain"}}, "no view"},
		{"unknown visibility", server.Tool{Name: "t", UI: &server.ToolUI{ResourceURI: "ui://app/view", Visibility: []string{"user"}}}, `visibility "user"`},
		{"ui in _meta too", server.Tool{Name: "t", Meta: server.Meta{"ui": 1}, UI: &server.ToolUI{ResourceURI: "ui://app/view"}}, "not _meta.ui"},
		{"flat key in _meta too", server.Tool{Name: "t", Meta: server.Meta{"ui/resourceUri": "ui://app/view"}, UI: &server.ToolUI{ResourceURI: "ui://app/view"}}, "ui/resourceUri"},
	}
	for _, tc := range tools {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := server.New()
			require.NoError(t, srv.AddView(ok))
			require.NoError(t, srv.AddResource(server.Resource{URI: "ui://app/plain", Name: "plain"}, func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
				return &server.ReadResourceResult{}, nil
			}))
			err := srv.AddTool(tc.tool, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text(""), nil
			})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.False(t, registered(srv, "t"))
		})
	}
}

// TestToolUIIsCopied: changing the ToolUI or the view's metadata after
// registration changes nothing served.
func TestToolUIIsCopied(t *testing.T) {
	testkit.Watchdog(t)
	srv := server.New()
	csp := &server.ViewCSP{ConnectDomains: []string{"https://a.example.com"}}
	require.NoError(t, srv.AddView(server.View{URI: "ui://app/view", Name: "view", HTML: []byte("<p>"), UI: server.ViewUI{CSP: csp}}))
	ui := &server.ToolUI{ResourceURI: "ui://app/view", Visibility: []string{"model"}}
	require.NoError(t, srv.AddTool(server.Tool{Name: "t", UI: ui}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("ok"), nil
	}))
	ui.Visibility[0], ui.RequireUI = "app", true
	csp.ConnectDomains[0] = "https://evil.example.com"

	c := mcptest.Connect(t, srv)
	tools := listUITools(t, pipeCaller(c))
	require.Contains(t, tools, "t", "still visible to the model, so to a client without the extension")
	contents := c.ReadResource("ui://app/view")
	require.Len(t, contents, 1)
	raw, _ := c.Call("resources/read", map[string]any{"uri": "ui://app/view"})
	assert.Contains(t, string(raw), "https://a.example.com")
	assert.NotContains(t, string(raw), "evil")
}

// TestViewToolAsTask: the text fallback also holds for a call run as a
// (2025) task, whose result comes from tasks/result.
func TestViewToolAsTask(t *testing.T) {
	testkit.Watchdog(t)
	srv := server.New()
	require.NoError(t, srv.AddView(server.View{URI: "ui://app/view", Name: "view", HTML: []byte("<p>")}))
	require.NoError(t, srv.AddTool(server.Tool{
		Name: "slow", UI: &server.ToolUI{ResourceURI: "ui://app/view"},
		Execution: &server.ToolExecution{TaskSupport: server.TaskSupportOptional},
	}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return &server.CallToolResult{StructuredContent: map[string]int{"n": 1}}, nil
	}))
	c := mcptest.Connect(t, srv)
	raw, rpcErr := c.Call("tools/call", map[string]any{"name": "slow", "task": map[string]any{}})
	require.Nil(t, rpcErr)
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	require.NoError(t, json.Unmarshal(raw, &created), "%s", raw)
	require.NotEmpty(t, created.Task.TaskID, "%s", raw)
	raw, rpcErr = c.Call("tasks/result", map[string]any{"taskId": created.Task.TaskID})
	require.Nil(t, rpcErr)
	assert.Contains(t, string(raw), `"content":[{"type":"text","text":"{\"n\":1}"}]`)
}
