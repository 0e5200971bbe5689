package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// BenchmarkRedisPerSession measures what a new session costs the Redis
// it lives on (one node, as one shard of a Cluster): a vigil -redis
// replica makes b.N sessions (initialize, then notifications/initialized,
// as a client does), and Redis's own counters say the commands it ran
// and the CPU it spent per session (INFO commandstats, INFO cpu), from
// which deploy/SCALING.md derives what a shard sustains. The replica's
// lease renewals (4 a second) are counted in, a few per thousand.
func BenchmarkRedisPerSession(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	url := startBenchReplica(b, srv.URL())
	cmds0, cpu0 := redisCounters(b, rdb)
	b.ResetTimer()
	for range b.N {
		benchInitialize(b, url)
	}
	b.StopTimer()
	cmds1, cpu1 := redisCounters(b, rdb)
	b.ReportMetric(float64(cmds1-cmds0)/float64(b.N), "redis-cmds/session")
	b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "redis-cpu-µs/session")
}

// redisCounters returns the commands Redis ran and the CPU seconds it
// spent (user and system) so far.
func redisCounters(b *testing.B, rdb *redis.Client) (cmds int64, cpu float64) {
	b.Helper()
	stats, err := rdb.Info(b.Context(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(stats, "\n") {
		if _, rest, ok := strings.Cut(line, ":calls="); ok {
			n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
			cmds += n
		}
	}
	info, err := rdb.Info(b.Context(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		for _, k := range []string{"used_cpu_user:", "used_cpu_sys:"} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				cpu += f
			}
		}
	}
	return cmds - 2, cpu // the two INFO
}

// startBenchReplica runs vigil -redis redisURL until b ends, and returns
// its MCP URL once it is ready.
func startBenchReplica(b *testing.B, redisURL string) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cmd := exec.Command(vigilBin, "-http", addr, "-redis", redisURL, "-quota-sessions", "1000000", "-max-sessions", "1000000")
	cmd.Env = append(os.Environ(), "VIGIL_REQUEST_STATE_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "VIGIL_CLUSTER_KEY="+testClusterKeyB64)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return "http://" + addr + "/mcp"
			}
		}
		if time.Now().After(deadline) {
			b.Fatal("vigil is not ready within 20s")
		}
		time.Sleep(20 * time.Millisecond) // waiting for a process to listen: no event to wait on
	}
}

// benchInitialize makes a session as a client does: initialize, then
// notifications/initialized.
func benchInitialize(b *testing.B, url string) {
	sid := benchPost(b, url, "", outageInit, http.StatusOK)
	benchPost(b, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, http.StatusAccepted)
}

// benchPost posts body in session sid and returns the session id the
// answer names; an answer other than want fails b.
func benchPost(b *testing.B, url, sid, body string, want int) string {
	req, err := http.NewRequestWithContext(b.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("status %d, want %d", resp.StatusCode, want)
	}
	return resp.Header.Get("Mcp-Session-Id")
}
