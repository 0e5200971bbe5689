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
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// outageReplica is one vigil -redis process of the outage tests.
type outageReplica struct {
	t      *testing.T
	addr   string
	log    string
	exited <-chan struct{} // closed when the process exits
}

// startOutageReplica runs vigil -redis redisURL with args and waits until
// it listens (not until it is ready: Redis may be away).
func startOutageReplica(t *testing.T, redisURL string, args ...string) *outageReplica {
	t.Helper()
	return startReplicaWith(t, nil, append([]string{"-redis", redisURL}, args...)...)
}

// startReplicaWith runs vigil with args and env (besides the keys) and
// waits until it listens.
func startReplicaWith(t *testing.T, env []string, args ...string) *outageReplica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	r := &outageReplica{t: t, addr: addr, log: filepath.Join(t.TempDir(), "vigil.log")}
	f, err := os.Create(r.log)
	require.NoError(t, err)
	cmd := exec.Command(vigilBin, append([]string{"-http", addr, "-shutdown-grace", "1s"}, args...)...)
	cmd.Env = append(os.Environ(), "VIGIL_REQUEST_STATE_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "VIGIL_CLUSTER_KEY="+testClusterKeyB64)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = f
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	r.exited = exited
	go func() { _ = cmd.Wait(); _ = f.Close(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-exited:
			logs, _ := os.ReadFile(r.log)
			t.Fatalf("vigil exited:\n%s", logs)
		default:
		}
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			_ = resp.Body.Close()
			return r
		}
		require.True(t, time.Now().Before(deadline), "vigil does not listen within 20s")
		time.Sleep(20 * time.Millisecond) // waiting for a process to listen: no event to wait on
	}
}

// ready is /readyz's status.
func (r *outageReplica) ready() int {
	status, _ := r.readyz()
	return status
}

// readyz is /readyz's status and text.
func (r *outageReplica) readyz() (int, string) {
	resp, err := http.Get("http://" + r.addr + "/readyz")
	if err != nil {
		return 0, ""
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// redisUp is the replica's mcp_server_redis_up.
func (r *outageReplica) redisUp() float64 {
	resp, err := http.Get("http://" + r.addr + "/metrics")
	require.NoError(r.t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(r.t, err)
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "mcp_server_redis_up "); ok {
			var f float64
			_, _ = fmt.Sscan(v, &f)
			return f
		}
	}
	return -1
}

// post sends body, with the headers of a session (sid) or of a
// 2026-07-28 request (sid "2026"), and returns the status, Retry-After
// and the answer.
func (r *outageReplica) post(sid, body string) (int, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.addr+"/mcp", strings.NewReader(body))
	require.NoError(r.t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	switch sid {
	case "":
	case "2026":
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
	default:
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	defer func() { _ = resp.Body.Close() }()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(answer)
}

const (
	outageEcho      = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"held"}}}`
	outageStateless = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"stateless"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	outageInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"outage","version":"1"}}}`
)

// TestRedisOutageKeepsServing: replicas started while Redis is down are
// not ready until Redis answers, then ready within 2 s of it. While Redis
// is down again, a replica stays ready (the default) and serves a
// stateless call and the session it holds, and refuses a new session and
// a session it holds no view of with 503 and Retry-After; one with
// -redis-outage-unready leaves the load balancer instead.
func TestRedisOutageKeepsServing(t *testing.T) {
	redis := redistest.Start(t)
	redis.Kill()
	serving := startOutageReplica(t, redis.URL())
	unready := startOutageReplica(t, redis.URL(), "-redis-outage-unready")
	assert.Equal(t, http.StatusServiceUnavailable, serving.ready(), "never reached Redis: not ready")
	assert.Equal(t, http.StatusServiceUnavailable, unready.ready())

	redis.Restart() // returns once Redis answers
	answering := time.Now()
	for _, r := range []*outageReplica{serving, unready} {
		for r.ready() != http.StatusOK && time.Since(answering) < 5*time.Second {
			time.Sleep(5 * time.Millisecond) // polling /readyz, as a readiness probe does
		}
		took := time.Since(answering)
		t.Logf("%s ready %v after Redis answered", r.addr, took.Round(time.Millisecond))
		assert.Less(t, took, 2*time.Second, "ready within 2 s of Redis answering")
	}

	status, text := serving.readyz()
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ready\n", text, "Redis answers: nothing more to say")

	sid := (&chClient{t: t, url: "http://" + serving.addr + "/mcp", http: http.DefaultClient}).initialize()
	status, _, answer := serving.post(sid, outageEcho)
	require.Equal(t, http.StatusOK, status, answer)

	redis.Kill()
	require.Eventually(t, func() bool { return serving.redisUp() == 0 && unready.redisUp() == 0 }, 5*time.Second, 20*time.Millisecond, "the replicas see Redis down")
	status, text = serving.readyz()
	assert.Equal(t, http.StatusOK, status, "stays ready through the outage")
	// Ready without its store, /readyz says so, and what that refuses.
	assert.Equal(t, "ready\nshared session store away (Redis does not answer): new sessions, and sessions this replica holds no view of, get 503; rate limits hold per replica\n", text)
	assert.Equal(t, http.StatusServiceUnavailable, unready.ready(), "-redis-outage-unready: not ready")

	status, _, answer = serving.post(sid, outageEcho)
	assert.Equal(t, http.StatusOK, status, "the session it holds: %s", answer)
	assert.Contains(t, answer, `"held"`)
	status, _, answer = serving.post("2026", outageStateless)
	assert.Equal(t, http.StatusOK, status, "a stateless call: %s", answer)
	assert.Contains(t, answer, `"stateless"`)
	status, retry, answer := serving.post("", outageInit)
	assert.Equal(t, http.StatusServiceUnavailable, status, "a new session: %s", answer)
	assert.NotEmpty(t, retry, "with Retry-After")
	status, retry, answer = unready.post(sid, outageEcho)
	assert.Equal(t, http.StatusServiceUnavailable, status, "a session it holds no view of: %s", answer)
	assert.NotEmpty(t, retry, "with Retry-After")

	redis.Restart()
	require.Eventually(t, func() bool { return unready.ready() == http.StatusOK }, 3*time.Second, 10*time.Millisecond)
	status, _, answer = serving.post("", outageInit)
	assert.Equal(t, http.StatusOK, status, "new sessions again once Redis answers: %s", answer)
}

// TestHealthzWhateverRedis (issue 77, V6): /healthz answers within the
// same few seconds of the start whatever Redis's shape and state: three
// Sentinels that refuse, a Sentinel that accepts and never answers, a node
// and a Cluster seed that refuse (it first answered 34.9 s after the start
// with the Sentinels away, 5.4 s with one node). Meanwhile the replica is
// not ready (it never reached Redis), and go-redis's own log is throttled:
// at most 5 lines, then one every 10 s.
func TestHealthzWhateverRedis(t *testing.T) {
	refused := func() string { return refusingAddr(t) }
	silent := silentAddr(t)
	for name, url := range map[string]string{
		"Sentinels refuse":         "redis+sentinel://" + refused() + "," + refused() + "," + refused() + "/mymaster",
		"a Sentinel never answers": "redis+sentinel://" + silent + "/mymaster",
		"a node refuses":           "redis://" + refused() + "/0",
		"a Cluster seed refuses":   "redis+cluster://" + refused(),
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			r := startOutageReplica(t, url)
			took := time.Since(start)
			t.Logf("/healthz answered %v after the start", took.Round(time.Millisecond))
			assert.Less(t, took, 10*time.Second)
			assert.Equal(t, http.StatusServiceUnavailable, r.ready(), "never reached Redis: not ready")
			logs, err := os.ReadFile(r.log)
			require.NoError(t, err)
			lines := strings.Count(string(logs), "source=go-redis")
			assert.LessOrEqual(t, lines, 5+int(time.Since(start)/(10*time.Second))+1, "go-redis's log throttled:\n%s", logs)
		})
	}
}

// TestRedisPasswordParameterRefusedAtStart (issue 77, V4): a password as
// a URL parameter on the command line is refused at start as user:pass@
// is, pointing at the variables, without repeating it.
func TestRedisPasswordParameterRefusedAtStart(t *testing.T) {
	for _, url := range []string{
		"redis+sentinel://127.0.0.1:1/mymaster?password=X-s3cr3t",
		"redis+sentinel://127.0.0.1:1/mymaster?sentinel_user=w&sentinel_password=X-s3cr3t",
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		cmd := exec.CommandContext(ctx, vigilBin, "-http", "127.0.0.1:0", "-redis", url)
		cmd.Env = append(os.Environ(), "VIGIL_CLUSTER_KEY="+testClusterKeyB64)
		out, err := cmd.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s: started:\n%s", url, out)
		require.Equal(t, 1, exit.ExitCode(), "%s: exits at once, not killed after 20 s:\n%s", url, out)
		assert.Contains(t, string(out), "pass it in VIGIL_REDIS_PASSWORD (the Sentinels' in VIGIL_REDIS_SENTINEL_PASSWORD)")
		assert.NotContains(t, string(out), "X-s3cr3t")
	}
}

// TestRedisPasswordNeverShown: for 9 shapes of -redis (a node, with and
// without a user, over TLS, Sentinels refusing or silent with the
// Sentinels' own password, a Cluster, the password in VIGIL_REDIS_URL as
// user:password@ and as ?password=), none of them answering, the
// passwords never appear in the log (go-redis's own lines included),
// /readyz, /metrics or the live page.
func TestRedisPasswordNeverShown(t *testing.T) {
	const pw, spw = "Pw-s3cr3t-4711", "Spw-s3cr3t-0815"
	refused := func() string { return refusingAddr(t) }
	silent := silentAddr(t)
	passwords := []string{"VIGIL_REDIS_PASSWORD=" + pw, "VIGIL_REDIS_SENTINEL_PASSWORD=" + spw}
	for name, tc := range map[string]struct {
		env  []string
		args []string
	}{
		"node":                          {passwords[:1], []string{"-redis", "redis://" + refused() + "/0"}},
		"node with a user":              {passwords[:1], []string{"-redis", "redis://vigil@" + refused() + "/2"}},
		"node over TLS":                 {passwords[:1], []string{"-redis", "rediss://vigil@" + refused() + "/0"}},
		"Sentinels refusing":            {passwords, []string{"-redis", "redis+sentinel://" + refused() + "," + refused() + "/mymaster"}},
		"a silent Sentinel":             {passwords, []string{"-redis", "redis+sentinel://vigil@" + silent + "/mymaster?sentinel_user=watch"}},
		"Cluster":                       {passwords[:1], []string{"-redis", "redis+cluster://vigil@" + refused() + "," + refused()}},
		"Cluster over TLS":              {passwords[:1], []string{"-redis", "rediss+cluster://" + refused()}},
		"URL in the environment":        {[]string{"VIGIL_REDIS_URL=redis://vigil:" + pw + "@" + refused() + "/0"}, nil},
		"?password= in the environment": {[]string{"VIGIL_REDIS_URL=redis+sentinel://" + refused() + "/mymaster?password=" + pw, "VIGIL_REDIS_SENTINEL_PASSWORD=" + spw}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			r := startReplicaWith(t, tc.env, tc.args...)
			time.Sleep(1500 * time.Millisecond) // a few renewals and go-redis lines: nothing to wait on but time
			var seen []string
			for _, path := range []string{"/readyz", "/metrics", "/debug/vigil"} {
				resp, err := http.Get("http://" + r.addr + path)
				require.NoError(t, err)
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				seen = append(seen, string(body))
			}
			logs, err := os.ReadFile(r.log)
			require.NoError(t, err)
			seen = append(seen, string(logs))
			assert.Contains(t, string(logs), "Redis does not answer yet", "the replica logged its Redis")
			for _, s := range seen {
				assert.NotContains(t, s, pw)
				assert.NotContains(t, s, spw)
			}
		})
	}
}

// refusingAddr is a loopback address where nothing listens: a connection
// is refused at once.
func refusingAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// silentAddr is a loopback address that accepts connections and never
// answers, until the test ends.
func silentAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	held := make(chan net.Conn, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case held <- c:
			default:
				_ = c.Close()
			}
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for {
			select {
			case c := <-held:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return ln.Addr().String()
}
