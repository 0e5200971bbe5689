package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSandboxEgressByName: an upstream whose profile allows one HOST:PORT
// reaches it through the gateway's egress proxy, and nothing else: not
// another port of that host, not a host by a name that resolves to
// loopback, not the metadata address, not a public host no rule names;
// each refusal is counted in /metrics by upstream, host and reason, and
// shown on the live page.
func TestSandboxEgressByName(t *testing.T) {
	allowed := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "allowed host") }))
	defer allowed.Close()
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "must not be reached") }))
	defer other.Close()
	self, err := os.Executable()
	require.NoError(t, err)
	allowedAddr := allowed.Listener.Addr().String()
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())

	svc := startService(t, "-http", "127.0.0.1:0", "-upstream-sandbox-dir", t.TempDir(),
		"-upstream", "web="+self+" -test.run=^$", "-upstream-env", "web="+escapeUpstreamEnv+"=1",
		"-upstream-sandbox", "web=none,net="+allowedAddr+",net=example.invalid:443",
	)
	hc := &http.Client{Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	fetch := func(url string) string {
		args, _ := json.Marshal(map[string]string{"url": url})
		m, err := c.rpc("2", "tools/call", `{"name":"fetch","arguments":`+string(args)+`}`)
		require.NoError(t, err)
		require.Nil(t, m.Error, "%s", m.Result)
		var res struct{ Content []struct{ Text string } }
		require.NoError(t, json.Unmarshal(m.Result, &res))
		require.Len(t, res.Content, 1)
		return res.Content[0].Text
	}
	assert.Equal(t, "status 200: allowed host", fetch("https://"+allowedAddr+"/"), "the host its profile names, through the proxy")
	for _, u := range []string{
		"https://127.0.0.1:" + otherPort + "/",     // another port of that host: not_allowed
		"https://localhost:" + otherPort + "/",     // a name: not_allowed
		"http://169.254.169.254/latest/meta-data/", // the metadata address: not_allowed
		"https://example.invalid/",                 // allowed by name, but no such host: resolve
		"https://registry.npmjs.org/",              // a public host no rule names: not_allowed
	} {
		got := fetch(u)
		assert.NotContains(t, got, "must not be reached", u)
		assert.NotContains(t, got, "status 200", u)
	}

	metrics := func() string {
		resp, err := hc.Get(svc.base + "/metrics")
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}()
	for _, want := range []string{
		`mcp_gateway_upstream_egress_refused_total{host="127.0.0.1",reason="not_allowed",upstream="web"} 1`,
		`mcp_gateway_upstream_egress_refused_total{host="localhost",reason="not_allowed",upstream="web"} 1`,
		`mcp_gateway_upstream_egress_refused_total{host="169.254.169.254",reason="not_allowed",upstream="web"} 1`,
		`mcp_gateway_upstream_egress_refused_total{host="example.invalid",reason="resolve",upstream="web"} 1`,
		`mcp_gateway_upstream_egress_refused_total{host="registry.npmjs.org",reason="not_allowed",upstream="web"} 1`,
	} {
		assert.Contains(t, metrics, want)
	}
	resp, err := hc.Get(svc.base + "/debug/vigil?format=json")
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(page), "sandbox network "+allowedAddr, "the live page shows its profile")
	assert.Contains(t, string(page), "egress refused", "and its refusals")
	assert.True(t, svc.logs.waitFor(`msg="sandbox egress refused" upstream=web host=169.254.169.254 reason=not_allowed`, 10*time.Second), "each refusal logged")
}
