package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/nginxtest"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// tlsRedisEnv is the environment of a replica on rs (StartTLS): the URL
// and the password of the ACL user in the environment, as a Secret gives
// them, and the state key every replica shares.
func tlsRedisEnv(rs *redistest.Server) []string {
	return append(os.Environ(),
		"VIGIL_REDIS_URL="+rs.URL(), "VIGIL_REDIS_PASSWORD="+rs.Password(),
		"VIGIL_REQUEST_STATE_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "VIGIL_CLUSTER_KEY="+testClusterKeyB64)
}

// startTLSReplica runs vigil on rs (StartTLS) with -redis-ca and args on
// a free port until the test ends, waits until it is ready, and returns
// host:port.
func startTLSReplica(t *testing.T, rs *redistest.Server, args ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	logPath := filepath.Join(t.TempDir(), "vigil.log")
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(vigilBin, append([]string{"-http", addr, "-redis-ca", rs.CAFile()}, args...)...)
	cmd.Env = tlsRedisEnv(rs)
	cmd.Stderr = logf
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("vigil %s:\n%s", addr, log)
		}
	})
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

// TestSharedReplicasOnTLSRedis runs the shipped vigil as three replicas on
// a redis-server as the shared kits run it (TLS only, its own CA, the
// default user off, an ACL user with the commands, keys and channels Vigil
// uses), behind nginx round robin: a session initialized on one replica
// calls a tool whose elicitation is answered through another and echoes
// through a third, under shared rate limits and session quotas. The
// session's record and quota entry expire after -idle-timeout. Redis's
// ACL log stays empty: the ACL user allows all that Vigil runs.
func TestSharedReplicasOnTLSRedis(t *testing.T) {
	rs := redistest.StartTLS(t)
	var upstreams []string
	for range 3 {
		// The shared rate limits and session quotas run on it too; the
		// sessions' idle timeout is the endpoint's, in Redis too.
		upstreams = append(upstreams, startTLSReplica(t, rs, "-rate-limit", "1000", "-quota-sessions", "100", "-idle-timeout", "47m"))
	}
	proxy := nginxtest.Start(t, upstreams...)
	c := &chClient{t: t, url: proxy.URL() + "/mcp", http: &http.Client{}}

	sid := c.initialize()
	cf := &chConfirm{sid: sid, started: make(chan struct{}), asked: make(chan json.RawMessage, 1), outcome: make(chan string, 1)}
	go c.run(cf)
	<-cf.started
	var id json.RawMessage
	select {
	case id = <-cf.asked:
	case out := <-cf.outcome:
		t.Fatalf("%s before the elicitation", out)
	}
	resp, err := c.post(t.Context(), sid, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"action":"accept","content":{"confirm":true}}}`)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, "ok", <-cf.outcome, "the answer reached the replica that asked, over Redis")
	for i := range 3 {
		status, ok := c.echo(sid, i)
		assert.Equal(t, http.StatusOK, status)
		assert.True(t, ok, "echo %d", i)
	}

	admin := rs.Client(t)
	for _, pattern := range []string{"rate:vigil:*", "vigil:sessions:*", "vigil:{*}:s"} {
		keys, err := admin.Keys(t.Context(), pattern).Result()
		require.NoError(t, err)
		assert.NotEmpty(t, keys, "the replicas keep %s on Redis", pattern)
		if pattern != "rate:vigil:*" {
			for _, k := range keys {
				ttl := admin.PTTL(t.Context(), k).Val()
				assert.True(t, ttl > 46*time.Minute && ttl <= 47*time.Minute, "%s expires after -idle-timeout: %v", k, ttl)
			}
		}
	}
	entries, err := admin.Do(t.Context(), "ACL", "LOG").Slice()
	require.NoError(t, err)
	assert.Empty(t, entries, "no command, key or channel of Vigil is denied to its ACL user")
}

// TestTLSRedisRefusedAtStart: a wrong password, a Redis certificate of a
// CA vigil does not trust, and plain redis:// to a Redis that is not on
// loopback stop vigil at start-up, before it listens, saying why and never
// showing the password.
func TestTLSRedisRefusedAtStart(t *testing.T) {
	rs := redistest.StartTLS(t)
	other := redistest.StartTLS(t)
	for name, tc := range map[string]struct {
		env  []string
		args []string
		want string
	}{
		"wrong password": {[]string{"VIGIL_REDIS_PASSWORD=wrong-" + rs.Password()}, []string{"-redis-ca", rs.CAFile()}, "WRONGPASS"},
		"untrusted CA":   {nil, []string{"-redis-ca", other.CAFile()}, "certificate signed by unknown authority"},
		"plaintext":      {[]string{"VIGIL_REDIS_URL=redis://redis.example:6379/0"}, nil, "redis:// has no TLS"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, vigilBin, append([]string{"-http", "127.0.0.1:0"}, tc.args...)...)
			cmd.Env = append(tlsRedisEnv(rs), tc.env...)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "vigil started:\n%s", out)
			require.NoError(t, ctx.Err())
			assert.Contains(t, string(out), tc.want)
			assert.NotContains(t, string(out), rs.Password())
			assert.NotContains(t, string(out), "/mcp", "it never listened")
		})
	}
}
