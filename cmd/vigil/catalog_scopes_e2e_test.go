package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
