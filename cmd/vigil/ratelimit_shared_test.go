package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/benchkit"
	"github.com/vigil-mcp/vigil/internal/testkit/nginxtest"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// startRLReplica runs vigil -redis with args on a free port until the test
// ends, and waits until it is ready; it returns host:port.
func startRLReplica(t *testing.T, redisURL string, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	logf, err := os.Create(filepath.Join(t.TempDir(), "vigil.log"))
	require.NoError(t, err)
	cmd := exec.Command(vigilBin, append([]string{"-http", addr, "-redis", redisURL}, args...)...)
	cmd.Env = append(os.Environ(), "VIGIL_REQUEST_STATE_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "VIGIL_CLUSTER_KEY="+testClusterKeyB64)
	cmd.Stderr = logf
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		require.True(t, time.Now().Before(deadline), "replica %s not ready within 20s", addr)
		time.Sleep(20 * time.Millisecond) // waiting for a process to listen: no event to wait on
	}
}

// scrapeSum returns the sum of a counter's series on a replica's /metrics.
func scrapeSum(t *testing.T, addr, name string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	n, _, err := benchkit.SumCounter(resp.Body, name)
	require.NoError(t, err)
	return n
}

// TestRateLimitsSharedReplicas runs the shipped vigil as three replicas
// with -redis and rate limits on a real redis-server, behind a real nginx
// doing round robin: one principal (the proxy's address) gets one burst
// of a tool over the three, its total of requests stays within its rate
// and one burst, and every refusal is counted. Then Redis stops: each
// replica limits alone, so the principal gets at most one rate per
// replica, never unlimited, and the fallbacks are counted.
func TestRateLimitsSharedReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("three replicas: skipped with -short")
	}
	const (
		rate      = 2
		burst     = 40
		toolBurst = 3
		replicas  = 3
	)
	rs := redistest.Start(t)
	var addrs []string
	for range replicas {
		addrs = append(addrs, startRLReplica(t, rs.URL(), "-rate-limit", strconv.Itoa(rate), "-rate-burst", strconv.Itoa(burst),
			"-tool-rate-limits", "echo=0.001/"+strconv.Itoa(toolBurst)))
	}
	proxy := nginxtest.Start(t, addrs...)
	c := &chClient{t: t, url: proxy.URL() + "/mcp", http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
	start := time.Now()
	posts, limited := 0, 0
	send := func(sid, body string) (int, string) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		resp, err := c.post(ctx, sid, body)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		posts++
		if resp.StatusCode == http.StatusTooManyRequests {
			limited++
			assert.NotEmpty(t, resp.Header.Get("Retry-After"))
			assert.Contains(t, string(b), `"quota":"rate"`)
		}
		return resp.StatusCode, string(b)
	}

	// The tool's burst, over three replicas.
	sid := c.initialize()
	posts += 2
	calls, toolRefused := 0, 0
	for i := range 4 * replicas {
		status, body := send(sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"e%d"}}}`, i+1, i+1))
		require.Equal(t, http.StatusOK, status, body)
		switch {
		case strings.Contains(body, `"quota":"tool_rate"`):
			toolRefused++
		case strings.Contains(body, fmt.Sprintf(`"text":"e%d"`, i+1)):
			calls++
		default:
			t.Fatalf("call %d: %s", i+1, body)
		}
	}
	assert.Equal(t, toolBurst, calls, "one tool burst over %d replicas", replicas)

	// The principal's rate: two bursts of requests, so that each replica
	// sees fewer than one burst: only the shared bucket refuses them, and
	// each replica's own bucket has tokens left for the outage below.
	for range 2*burst - posts {
		send("", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	}
	elapsed := time.Since(start)
	admitted := posts - limited
	allowed := burst + int(rate*elapsed.Seconds()) + 1
	t.Logf("%d of %d POSTs admitted in %v (limit %d, ± one burst)", admitted, posts, elapsed, allowed)
	assert.GreaterOrEqual(t, admitted, burst)
	assert.LessOrEqual(t, admitted, allowed+burst, "within the rate and one burst over all replicas")
	assert.Positive(t, limited, "each replica saw less than a burst, yet the principal was refused")

	var refusals int64
	for _, a := range addrs {
		refusals += scrapeSum(t, a, "mcp_server_quota_refusals_total")
		assert.Zero(t, scrapeSum(t, a, "mcp_server_ratelimit_fallbacks_total"), "Redis answered")
	}
	assert.Equal(t, int64(limited+toolRefused), refusals, "every refusal counted once")

	// Redis away: each replica limits alone.
	rs.Stop()
	start, posts, limited = time.Now(), 0, 0
	for range 4 * replicas * burst {
		send("", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	}
	elapsed = time.Since(start)
	admitted = posts - limited
	t.Logf("Redis away: %d of %d POSTs admitted in %v", admitted, posts, elapsed)
	assert.Positive(t, limited, "never unlimited")
	assert.LessOrEqual(t, admitted, replicas*(burst+int(rate*elapsed.Seconds())+1), "at most one rate per replica")
	var fallbacks int64
	for _, a := range addrs {
		fallbacks += scrapeSum(t, a, "mcp_server_ratelimit_fallbacks_total")
	}
	assert.Positive(t, fallbacks, "the decisions without Redis are counted")
}

// TestSessionQuotaSharedReplicas runs the shipped vigil as three replicas
// with -redis and -quota-sessions 4 behind a real nginx doing round robin:
// one caller (the proxy's address) opens four sessions over the three
// replicas, not twelve; the fifth is refused 429 with Retry-After and
// counted; deleting one of its sessions makes room on any replica.
func TestSessionQuotaSharedReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("three replicas: skipped with -short")
	}
	const quota, replicas = 4, 3
	rs := redistest.Start(t)
	var addrs []string
	for range replicas {
		addrs = append(addrs, startRLReplica(t, rs.URL(), "-quota-sessions", strconv.Itoa(quota)))
	}
	proxy := nginxtest.Start(t, addrs...)
	c := &chClient{t: t, url: proxy.URL() + "/mcp", http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
	open := func() (int, string, string) {
		resp, err := c.post(t.Context(), "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"quota","version":"1"}}}`)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusTooManyRequests {
			assert.NotEmpty(t, resp.Header.Get("Retry-After"))
			assert.Contains(t, string(b), `"quota":"sessions"`)
		}
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
	}
	var sids []string
	refused := 0
	for range 3 * quota {
		status, sid, body := open()
		switch status {
		case http.StatusOK:
			sids = append(sids, sid)
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Fatalf("initialize: %d %s", status, body)
		}
	}
	assert.Len(t, sids, quota, "one quota over %d replicas", replicas)
	var refusals int64
	for _, a := range addrs {
		refusals += scrapeSum(t, a, "mcp_server_quota_refusals_total")
	}
	assert.Equal(t, int64(refused), refusals, "every refusal counted once")

	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, c.url, nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", sids[0])
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := c.http.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	status, _, body := open()
	assert.Equal(t, http.StatusOK, status, "a deleted session makes room: %s", body)
}
