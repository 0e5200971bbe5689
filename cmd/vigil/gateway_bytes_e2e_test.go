package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/hostiletest"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// hostileUpstreamEnv makes the test binary the hostile stdio upstream of
// hostiletest.
const hostileUpstreamEnv = "HOSTILE_E2E_UPSTREAM"

// The upstream bytes' acceptance (issue 67): what vigil may reach in
// resident memory, at its peak (VmHWM), in front of hostile upstreams.
const (
	upstreamRSSBudget = 256 << 20
	logCallers        = 8 // callers of 32 log messages of 3 MiB who never read
)

// vmHWM returns the peak resident memory of process pid, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// waitMetrics polls vigil's /metrics until ok holds of them.
func waitMetrics(t *testing.T, hc *http.Client, base string, ok func(metrics string) bool) {
	t.Helper()
	for range 600 {
		resp, err := hc.Get(base + "/metrics")
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		if ok(string(b)) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the metrics never showed what was awaited")
}

// metricValue returns the value of series in metrics (text format), 0
// when absent.
func metricValue(metrics, series string) float64 {
	for line := range strings.Lines(metrics) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

// listTools sends tools/list and reads its answer whole: its size, and
// its status with its first bytes.
func listTools(c *svcClient) (int64, string, error) {
	resp, err := c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	var head [300]byte
	k, _ := io.ReadFull(resp.Body, head[:])
	n, err := io.Copy(io.Discard, resp.Body)
	return int64(k) + n, resp.Status + " " + string(head[:k]), err
}

// TestGatewayUpstreamBytes is the acceptance of the upstream bytes
// (issue 67): vigil fronts an upstream whose catalog is 224 MB (64 tools
// of 3.5 MB descriptions, one a page) and one whose catalog is 12 MB;
// four clients list the tools at once (sent again when the memory budget
// refuses one), and eight callers of a tool that
// sends 32 log messages of 3 MiB never read their answers. vigil's peak
// resident memory stays under 256 MiB; the 224 MB catalog is refused
// with a log naming its bound, and /readyz says that upstream is failing.
func TestGatewayUpstreamBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 1 GB")
	}
	self := os.Args[0] + " -test.run=^$"
	svc := startService(t, "-http", "127.0.0.1:0",
		"-upstream", "cat="+self, "-upstream-env", "cat="+hostileUpstreamEnv+"=1", "-upstream-env", "cat="+hostiletest.CatalogEnv+"=64:3500000",
		"-upstream", "bad="+self, "-upstream-env", "bad="+hostileUpstreamEnv+"=1", "-upstream-env", "bad="+hostiletest.CatalogEnv+"=4:3000000",
		"-upstream-required", "bad",
		// They build hundreds of MiB of output, several copies under -race:
		// more than a sandbox's default data bound.
		"-upstream-sandbox", "cat=none,memory=-1", "-upstream-sandbox", "bad=none,memory=-1")
	pid := svc.cmd.Process.Pid
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	t.Cleanup(hc.CloseIdleConnections)
	connect := func() *svcClient {
		c := &svcClient{hc: hc, url: svc.base + "/mcp"}
		res, err := c.rpc(`0`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bytes","version":"1"}}`)
		require.NoError(t, err)
		require.Nil(t, res.Error)
		require.NoError(t, c.notify("notifications/initialized"))
		return c
	}
	// bad is ready (required): its tools are served.
	waitMetrics(t, hc, svc.base, func(m string) bool {
		return strings.Contains(m, `mcp_gateway_upstream_state{state="ready",upstream="bad"} 1`)
	})

	// Four tools/list at once, each answer read whole: 12 MB. One that
	// the memory budget refuses (503, Retry-After: the answers unwritten
	// are over it) is sent again a second later.
	listers := make([]*svcClient, 4)
	loggers := make([]*svcClient, logCallers)
	for i := range listers {
		listers[i] = connect()
	}
	for i := range loggers {
		loggers[i] = connect()
		res, err := loggers[i].rpc(`3`, "logging/setLevel", `{"level":"debug"}`)
		require.NoError(t, err)
		require.Nil(t, res.Error)
	}
	var wg sync.WaitGroup
	for _, c := range listers {
		wg.Go(func() {
			for try := 0; ; try++ {
				n, status, err := listTools(c)
				if try < 5 && (err != nil || strings.Contains(status, protocol.RejectMemoryBudget.Message())) {
					time.Sleep(time.Second)
					continue
				}
				if assert.NoError(t, err) {
					assert.Greater(t, n, int64(12_000_000), "the 12 MB catalog: %s", status)
				}
				return
			}
		})
	}
	wg.Wait()

	// Callers of 32 log messages of 3 MiB each who never read.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var started sync.WaitGroup
	for i, c := range loggers {
		started.Add(1)
		wg.Go(func() {
			body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(10+i) + `,"method":"tools/call","params":{"name":"bad_logs","arguments":{"count":32,"kib":3072}}}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", c.session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			resp, err := hc.Do(req)
			started.Done()
			if err == nil {
				<-ctx.Done() // never read
				_ = resp.Body.Close()
			}
		})
	}
	started.Wait()
	// The upstream's messages come while the callers hold their streams:
	// the gateway holds 1 MiB of them a call and drops the rest.
	waitMetrics(t, hc, svc.base, func(m string) bool {
		return metricValue(m, `mcp_gateway_upstream_dropped_total{reason="notification",upstream="bad"}`) >= logCallers*16
	})
	peak := vmHWM(t, pid)
	cancel()
	wg.Wait()

	t.Logf("vigil's peak RSS (VmHWM): %.0f MiB", float64(peak)/(1<<20))
	assert.Less(t, peak, int64(upstreamRSSBudget), "peak RSS over %d MiB", upstreamRSSBudget>>20)
	assert.True(t, svc.logs.waitFor("the gateway's bound on an upstream's catalog (Upstream.MaxCatalogBytes; vigil -upstream-max-catalog)", 10*time.Second), "logged:\n%s", svc.logs.String())
	resp, err := hc.Get(svc.base + "/readyz")
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	assert.Contains(t, strings.Join(lines, "\n"), "upstream cat: failing")
}

// TestGatewaySixteenMiBResult (issue 67): through vigil over HTTP, a
// 16 MiB result of a stdio upstream reaches the caller with
// -upstream-max-message and -max-result-bytes raised; with the defaults
// its call fails, naming the bound and the flag; in both cases the
// upstream's process serves the next call.
func TestGatewaySixteenMiBResult(t *testing.T) {
	self := os.Args[0] + " -test.run=^$"
	for _, tc := range []struct {
		name string
		args []string
		want string // in the error; "" when the result passes
	}{
		{name: "defaults", want: "over the gateway's bound on a message of an upstream, 4194304 bytes (Upstream.MaxMessageBytes; vigil -upstream-max-message)"},
		{name: "raised", args: []string{"-upstream-max-message", "33554432", "-max-result-bytes", "33554432"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := startService(t, append([]string{"-http", "127.0.0.1:0", "-upstream", "bad=" + self, "-upstream-env", "bad=" + hostileUpstreamEnv + "=1"}, tc.args...)...)
			hc := &http.Client{}
			t.Cleanup(hc.CloseIdleConnections)
			c := &svcClient{hc: hc, url: svc.base + "/mcp"}
			res, err := c.rpc(`0`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bytes","version":"1"}}`)
			require.NoError(t, err)
			require.Nil(t, res.Error)
			require.NoError(t, c.notify("notifications/initialized"))
			waitMetrics(t, hc, svc.base, func(m string) bool {
				return strings.Contains(m, `mcp_gateway_upstream_state{state="ready",upstream="bad"} 1`)
			})
			pid, err := c.rpc(`1`, "tools/call", `{"name":"pid"}`)
			require.NoError(t, err)
			require.Nil(t, pid.Error)

			resp, err := c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"huge","arguments":{"mib":16,"idLast":true}}}`)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			require.NoError(t, err)
			if tc.want == "" {
				assert.Greater(t, len(body), 16<<20, "the whole result: %.300s", body)
				assert.NotContains(t, string(body[len(body)-300:]), `"error"`)
			} else {
				assert.Less(t, len(body), 4096)
				assert.Contains(t, string(body), tc.want)
			}
			again, err := c.rpc(`3`, "tools/call", `{"name":"pid"}`)
			require.NoError(t, err)
			assert.Equal(t, string(pid.Result), string(again.Result), "the same process serves on")
		})
	}
}
