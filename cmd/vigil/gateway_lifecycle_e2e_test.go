package main

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/flagvalue"
	"github.com/vigil-mcp/vigil/gateway"
)

// TestGatewayBrokenUpstreams: vigil in front of a healthy stdio upstream
// (vigil-everything -stdio), one that never answers (sleep 600) and one
// whose command does not exist serves the healthy one's tools while the
// silent one is still starting, though a flag names a tool of an upstream not ready yet;
// /readyz (503: every upstream is required by default), /metrics and the
// live page name each upstream's state; no command line or secret is in any answer to a
// caller or in /readyz. With -upstream-required naming the healthy one,
// /readyz is 200 and still names each state. SIGTERM ends vigil, and the
// upstream that never answered, within the grace.
func TestGatewayBrokenUpstreams(t *testing.T) {
	everything := filepath.Join(t.TempDir(), "vigil-everything")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", everything, "../vigil-everything").CombinedOutput()
	require.NoError(t, err, "%s", out)
	secrets := []string{"sleep 600", "/nonexistent", "s3cret-token", everything}
	args := []string{
		"-http", "127.0.0.1:0", "-shutdown-grace", "10s",
		"-upstream", "e=" + everything + " -stdio",
		"-upstream", "silent=sleep 600",
		"-upstream", "bad=/nonexistent/mcp-server --token s3cret-token",
		"-tool-rate-limits", "e_test_simple_text=100/100,silent_anything=1", // silent's tool checked once it serves
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()

	started := time.Now()
	svc := startService(t, args...)
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	var answers []string
	rpc := func(id, method, params string) svcMessage {
		t.Helper()
		m, err := c.rpc(id, method, params)
		require.NoError(t, err)
		raw, _ := json.Marshal(m) // decoded from JSON: encodes
		answers = append(answers, string(raw))
		return m
	}
	m := rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.Nil(t, m.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	m = rpc("2", "tools/list", `{}`)
	require.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), `"name":"e_test_simple_text"`)
	m = rpc("3", "tools/call", `{"name":"e_test_simple_text"}`)
	require.Nil(t, m.Error)
	served := time.Since(started)
	t.Logf("the healthy upstream's tool answered %v after vigil's start", served.Round(time.Millisecond))
	// silent waits for its start timeout (2 minutes by default): served
	// long before it, while silent is still starting (/readyz below).
	assert.Less(t, served, 30*time.Second, "served without waiting for silent's start")
	m = rpc("4", "tools/call", `{"name":"bad_anything"}`)
	require.NotNil(t, m.Error, "bad serves nothing")
	assert.Contains(t, m.Error.Message, "upstream bad is failing", "refused at once, naming the upstream and its state")

	readyz := svcGet(t, hc, svc.base+"/readyz", http.StatusServiceUnavailable)
	assert.Regexp(t, `^upstream e: ready \(sandbox none\)\nupstream silent: starting \(sandbox none\)\nupstream bad: failing, next start in \d+ s \(sandbox none\)\n$`, readyz)
	metrics := svcGet(t, hc, svc.base+"/metrics", http.StatusOK)
	for _, want := range []string{
		`mcp_gateway_upstream_state{state="ready",upstream="e"} 1`,
		`mcp_gateway_upstream_state{state="starting",upstream="silent"} 1`,
		`mcp_gateway_upstream_state{state="failing",upstream="bad"} 1`,
		`mcp_gateway_upstream_state{state="ready",upstream="bad"} 0`,
	} {
		assert.Contains(t, metrics, want)
	}
	var page struct {
		Status []string `json:"status"`
	}
	raw, err := debugGet(hc, svc.base+"/debug/vigil?format=json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &page))
	require.Len(t, page.Status, 3, "the live page names each upstream's state")
	assert.Regexp(t, `^upstream e: ready \(sandbox none\) · tools \d+ · starts \d+( · calls .*)?$`, page.Status[0])
	assert.Regexp(t, `^upstream silent: starting \(sandbox none\) · starts \d+$`, page.Status[1])
	assert.Regexp(t, `^upstream bad: failing, next start in \d+ s \(sandbox none\) · starts \d+$`, page.Status[2])
	for _, answer := range append(answers, readyz) {
		for _, secret := range secrets {
			assert.NotContains(t, answer, secret)
		}
	}

	hc.CloseIdleConnections()
	stopping := time.Now()
	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, svc.wait(15*time.Second), "exit status 0 after SIGTERM")
	t.Logf("vigil exited %v after SIGTERM", time.Since(stopping).Round(time.Millisecond))

	// Only the healthy upstream required: ready, the others still named.
	svc = startService(t, append(args, "-upstream-required", "e")...)
	readyz = svcGet(t, hc, svc.base+"/readyz", http.StatusOK)
	assert.Regexp(t, `^ready\nupstream e: ready \(sandbox none\)\nupstream silent: starting \(not required\) \(sandbox none\)\nupstream bad: failing, next start in \d+ s \(not required\) \(sandbox none\)\n$`, readyz)
	hc.CloseIdleConnections()
	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, svc.wait(15*time.Second))
}

// TestGatewayCallDuringStart: a call sent 50 ms after /healthz first
// answers, naming a tool of an upstream still starting (its process
// sleeps 3 s before it reads its input), waits for that upstream's first
// listing and is answered by it; a name of that upstream it does not
// list is then answered as unknown, at once.
func TestGatewayCallDuringStart(t *testing.T) {
	svc := startService(t, "-http", "127.0.0.1:0",
		"-upstream", "fast="+vigilBin+" -stdio",
		"-upstream", "slow=sh -c 'sleep 3; exec "+vigilBin+" -stdio'",
		"-upstream-sandbox", "slow=none,read="+filepath.Dir(vigilBin)) // the program sh runs: not an argument of its command line
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	var healthy time.Time
	svcEventually(t, "/healthz answers", 10*time.Second, func() (bool, error) {
		resp, err := hc.Get(svc.base + "/healthz")
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		healthy = time.Now()
		return resp.StatusCode == http.StatusOK, nil
	})
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	time.Sleep(time.Until(healthy.Add(50 * time.Millisecond))) // the moment the call is sent: no ordering rests on it
	require.Contains(t, svcGet(t, hc, svc.base+"/readyz", http.StatusServiceUnavailable), "upstream slow: starting (sandbox none)\n", "the call is made while slow starts")
	sent := time.Now()
	m, err = c.rpc("2", "tools/call", `{"name":"slow_echo","arguments":{"text":"through the start"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error, "the call of a tool of an upstream still starting waits for it")
	assert.Contains(t, string(m.Result), "through the start")
	t.Logf("sent %v after /healthz first answered; answered %v later", sent.Sub(healthy).Round(time.Millisecond), time.Since(sent).Round(time.Millisecond))
	m, err = c.rpc("3", "tools/call", `{"name":"slow_no_such_tool"}`)
	require.NoError(t, err)
	require.NotNil(t, m.Error)
	assert.Contains(t, m.Error.Message, "unknown tool", "listed: a name it does not list is unknown")
}

// TestKnownToolNames: a tool the flags name that no upstream serves yet
// is let through when it may be the tool of an upstream not ready yet
// (NAME_tool with several upstreams; any with one), and only then.
func TestKnownToolNames(t *testing.T) {
	t.Parallel()
	served := []string{"e_echo"}
	several := []gateway.UpstreamStatus{{Name: "e", State: gateway.StateReady}, {Name: "late", State: gateway.StateStarting}, {Name: "bad", State: gateway.StateFailing}}
	for _, tc := range []struct {
		name  string
		sts   []gateway.UpstreamStatus
		rates []string
		want  []string
	}{
		{name: "served", sts: several, rates: []string{"e_echo"}, want: []string{"e_echo"}},
		{name: "of upstreams not ready", sts: several, rates: []string{"late_x", "bad_y"}, want: []string{"bad_y", "e_echo", "late_x"}},
		{name: "of a ready upstream, unknown", sts: several, rates: []string{"e_nothing"}, want: []string{"e_echo"}},
		{name: "one upstream not ready", sts: several[1:2], rates: []string{"anything"}, want: []string{"anything", "e_echo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := config{toolRateLimits: map[string]flagvalue.ToolRate{}}
			for _, r := range tc.rates {
				cfg.toolRateLimits[r] = flagvalue.ToolRate{Rate: 1, Burst: 1}
			}
			assert.Equal(t, tc.want, knownToolNames(cfg, served, tc.sts, slog.New(slog.DiscardHandler)))
		})
	}
}
