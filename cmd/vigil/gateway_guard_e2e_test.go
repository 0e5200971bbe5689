package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// TestGatewayUpstreamToolsGuarded: behind -auth-issuer, an upstream's tool
// that -auth-tool-scopes gives a scope is refused (403 insufficient_scope)
// to a token without it and runs with it; -tool-rate-limits refuses its
// second call at once (tool_rate, with the seconds to wait); a call
// after the upstream went away is refused -32000 with a retry hint;
// /debug/vigil shows the upstream's calls with their outcomes; /metrics
// has the gateway's metrics.
func TestGatewayUpstreamToolsGuarded(t *testing.T) {
	const reader, writer, writer2 = "reader-token-5d2a", "writer-token-7f3b", "writer-token-9c4e"
	up := startRecordingUpstream(t)
	port := authResource(t)
	as := newScopeIssuer(t, port.resource, map[string]string{
		reader: "vigil.read", writer: "vigil.read vigil.write", writer2: "vigil.read vigil.write",
	})
	v := startVigilAuth(t, port, as.URL, []string{
		"VIGIL_AUTH_INTROSPECTION_CLIENT_ID=vigil", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET=s3cr3t",
	}, "-auth-scopes", "vigil.read", "-auth-tool-scopes", "hello=vigil.write", "-tool-rate-limits", "hello=0.001/1", "-upstream", "u="+up.url)
	base := strings.TrimSuffix(v.url, "/mcp")
	session := func(token string) *svcClient {
		hc := &http.Client{Transport: bearer{token: token, base: v.hc.Transport}, Timeout: 10 * time.Second}
		c := &svcClient{hc: hc, url: v.url}
		m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		require.NoError(t, c.notify("notifications/initialized"))
		return c
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hello"}}`

	// Without the tool's scope: 403 insufficient_scope naming it.
	r := session(reader)
	resp, err := r.post(call)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "vigil.write")

	// With it: the call runs upstream; the next one is over the tool's rate.
	w := session(writer)
	m, err := w.rpc("2", "tools/call", `{"name":"hello"}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), "hello from upstream")
	resp, err = w.post(strings.Replace(call, `"id":2`, `"id":3`, 1))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var refused quotaErrorData
	require.NoError(t, json.Unmarshal(sseData(body), &refused), "%s", body)
	require.NotNil(t, refused.Error, "%s", body)
	assert.Equal(t, "tool_rate", refused.Error.Data.Quota)
	assert.Positive(t, refused.Error.Data.RetryAfterSeconds)

	// The upstream goes away: the next call, of another principal (its
	// own rate bucket) on a session of its own, whose upstream session
	// cannot start, is refused naming the upstream, with a retry hint.
	up.stop()
	m, err = session(writer2).rpc("2", "tools/call", `{"name":"hello"}`)
	require.NoError(t, err)
	require.NotNil(t, m.Error)
	assert.Equal(t, int64(-32000), m.Error.Code)
	assert.Regexp(t, `^upstream u is not ready; try again in \d+ s$`, m.Error.Message)
	svcEventually(t, "the upstream's calls on /debug/vigil", 10*time.Second, func() (bool, error) {
		raw, err := debugGet(v.hc, base+"/debug/vigil?format=json")
		if err != nil {
			return false, err
		}
		var page struct {
			Stats []outcomeRow `json:"stats"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return false, err
		}
		return slices.ContainsFunc(page.Stats, func(r outcomeRow) bool {
			o := r.Total.ByOutcome
			return r.Key == "tools/call hello" && o["ok"] == 1 && o["error"] == 2 // the rate's refusal, and the upstream's
		}), nil
	})

	metrics := debugBody(t, v.hc, base+"/metrics")
	for _, name := range []string{mcpconv.MetricUpstreamCalls, mcpconv.MetricUpstreamCallDuration, mcpconv.MetricUpstreamStarts, mcpconv.MetricUpstreamSessions, mcpconv.MetricUpstreamDropped} {
		assert.Contains(t, metrics, "\n"+name, "vigil -upstream exposes %s", name)
	}
	assert.Contains(t, metrics, `mcp_gateway_upstream_calls_total{endpoint="",gen_ai_tool_name="hello",mcp_method_name="tools/call",outcome="ok",upstream="u"} 1`)
	assert.Contains(t, metrics, `mcp_gateway_upstream_calls_total{endpoint="",gen_ai_tool_name="hello",mcp_method_name="tools/call",outcome="not_ready",upstream="u"} 1`)
	assert.Contains(t, metrics, `mcp_gateway_upstream_calls_total{endpoint="",gen_ai_tool_name="hello",mcp_method_name="tools/call",outcome="upstream_closed",upstream="u"} 0`, "nothing was sent")
	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// outcomeRow is a method or tool's counts on /debug/vigil, by outcome.
type outcomeRow struct {
	Key   string `json:"key"`
	Total struct {
		ByOutcome map[string]uint64 `json:"by_outcome"`
	} `json:"since_start"`
}

// debugGet GETs u and returns its body, or an error unless 200.
func debugGet(hc *http.Client, u string) ([]byte, error) {
	resp, err := hc.Get(u)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return b, err
}

// sseData returns the data of the one event of an SSE body, or the body
// as it is when it is JSON.
func sseData(body []byte) []byte {
	for line := range strings.Lines(string(body)) {
		if data, ok := strings.CutPrefix(line, "data:"); ok {
			return []byte(strings.TrimSpace(data))
		}
	}
	return body
}
