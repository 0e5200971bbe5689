package redisshare_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/redisshare"
)

func TestOpenTakesTheLeaseAndCloseGivesItBack(t *testing.T) {
	redis := redistest.Start(t)
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	s, err := redisshare.Open(t.Context(), redisshare.Config{
		URL: redis.URL(), ClusterKey: redistest.ClusterKey(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Registerer: reg,
	})
	require.NoError(t, err)
	assert.True(t, s.Ready(), "Redis answered the first renewal")
	assert.Len(t, s.Options(), 2, "the cluster (with the lost-request and relay-refused hooks), the event store")
	assert.Len(t, s.ServerOptions(), 3, "task id prefix, fanout, requestStates used")
	assert.Contains(t, logs.String(), "replica="+s.Replica())
	assert.Contains(t, logs.String(), "redis="+redis.Addr()+"/0")

	observer, err := redisstore.New(t.Context(), redis.Client(t), redisstore.WithClusterKey(redistest.ClusterKey(), nil))
	require.NoError(t, err)
	defer func() { assert.NoError(t, observer.Close()) }()
	alive, err := observer.Alive(t.Context(), s.Replica())
	require.NoError(t, err)
	assert.True(t, alive, "the other replicas see this one alive")

	families, err := reg.Gather()
	require.NoError(t, err)
	assert.NotEmpty(t, families)

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "a second Close does nothing")
	alive, err = observer.Alive(t.Context(), s.Replica())
	require.NoError(t, err)
	assert.False(t, alive, "a clean exit releases the lease")
}

func TestOpenNeverShowsThePassword(t *testing.T) {
	const secret = "s3cr3t-Pa55"
	// A URL that does not parse: the error names it without repeating it.
	_, err := redisshare.Open(t.Context(), redisshare.Config{URL: "redis://user:" + secret + "@host:notaport/0"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)

	// A server that is not there: the replica starts not ready, and its
	// logs name the address, not the credentials.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	var logs bytes.Buffer
	s, err := redisshare.Open(t.Context(), redisshare.Config{
		URL:        "redis://user:" + secret + "@" + addr + "/2",
		ClusterKey: redistest.ClusterKey(),
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err, "Redis away is no reason to exit")
	assert.False(t, s.Ready())
	require.NoError(t, s.Close())
	assert.Contains(t, logs.String(), addr+"/2")
	assert.NotContains(t, logs.String(), secret)
}

// TestOpenTLS: rediss:// with the server's CA and the ACL user's password
// opens the shared mode; a wrong password, a CA that did not sign the
// server's certificate, skip_verify, and plain redis:// to a host that is
// not loopback are refused at start-up, each saying why.
func TestOpenTLS(t *testing.T) {
	rs := redistest.StartTLS(t)
	cfg := redisshare.Config{URL: rs.URL(), Password: rs.Password(), CAFile: rs.CAFile(), ClusterKey: redistest.ClusterKey()}
	s, err := redisshare.Open(t.Context(), cfg)
	require.NoError(t, err)
	assert.True(t, s.Ready())
	require.NoError(t, s.Close())

	other := redistest.StartTLS(t) // another CA
	for name, tc := range map[string]struct {
		cfg  func(*redisshare.Config)
		want string
	}{
		"wrong password":  {func(c *redisshare.Config) { c.Password += "x" }, "WRONGPASS"},
		"no password":     {func(c *redisshare.Config) { c.Password = "" }, "NOAUTH"},
		"untrusted CA":    {func(c *redisshare.Config) { c.CAFile = other.CAFile() }, "certificate signed by unknown authority"},
		"system CAs":      {func(c *redisshare.Config) { c.CAFile = "" }, "certificate signed by unknown authority (if Redis's CA is a private one, give it with -redis-ca)"},
		"skip_verify":     {func(c *redisshare.Config) { c.URL += "?skip_verify=true" }, "skip_verify would accept any server certificate"},
		"CA without TLS":  {func(c *redisshare.Config) { c.URL = "redis://127.0.0.1:1/0" }, "-redis-ca) is for TLS"},
		"CA file absent":  {func(c *redisshare.Config) { c.CAFile += ".absent" }, "-redis-ca: open"},
		"CA file not PEM": {func(c *redisshare.Config) { c.CAFile = "redisshare.go" }, "no PEM certificate"},
		"plaintext remote": {func(c *redisshare.Config) {
			c.URL, c.CAFile = "redis://redis.example:6379/0", ""
		}, "redis:// has no TLS"},
	} {
		t.Run(name, func(t *testing.T) {
			c := cfg
			tc.cfg(&c)
			_, err := redisshare.Open(t.Context(), c)
			require.ErrorContains(t, err, tc.want)
			assert.NotContains(t, err.Error(), rs.Password())
		})
	}
}

// TestOpenPlaintext: redis:// stays allowed on loopback and on a Unix
// socket, and elsewhere with AllowPlaintext (this one then fails to connect, not on the check).
func TestOpenPlaintext(t *testing.T) {
	rs := redistest.Start(t)
	s, err := redisshare.Open(t.Context(), redisshare.Config{
		URL:        "redis://localhost:" + strings.TrimPrefix(rs.Addr(), "127.0.0.1:") + "/0",
		ClusterKey: redistest.ClusterKey(),
	})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	// A Unix socket is local too: not refused for plain text.
	s, err = redisshare.Open(t.Context(), redisshare.Config{URL: "unix://" + t.TempDir() + "/absent.sock", ClusterKey: redistest.ClusterKey()})
	require.NoError(t, err)
	assert.False(t, s.Ready(), "no Redis there")
	require.NoError(t, s.Close())

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	s, err = redisshare.Open(ctx, redisshare.Config{URL: "redis://192.0.2.1:6379/0", AllowPlaintext: true, ClusterKey: redistest.ClusterKey()})
	require.NoError(t, err)
	assert.False(t, s.Ready(), "no Redis there")
	require.NoError(t, s.Close())
}

// TestReadyTurnsFalseWithinASecond: with UnreadyInOutage, a Redis that
// stops answering (its process stopped, its connections open, so that a
// request hangs until its timeout rather than failing at once) makes the
// replica unready within a second, and ready again once Redis answers.
func TestReadyTurnsFalseWithinASecond(t *testing.T) {
	redis := redistest.Start(t)
	s, err := redisshare.Open(t.Context(), redisshare.Config{URL: redis.URL(), ClusterKey: redistest.ClusterKey(), UnreadyInOutage: true})
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Close()) }()
	require.True(t, s.Ready())

	redis.Pause()
	paused := time.Now()
	for s.Ready() && time.Since(paused) < 3*time.Second {
		time.Sleep(10 * time.Millisecond) // polling Ready, as a readiness probe does
	}
	unready := time.Since(paused)
	redis.Resume()
	// Ready compares Redis's last answer with the clock, so it turns false
	// a second after it at the latest; the slack is the poll's own delay on
	// a busy machine (make test runs packages in parallel under -race).
	assert.LessOrEqual(t, unready, time.Second+300*time.Millisecond, "unready within a second of Redis's last answer")
	assert.Eventually(t, s.Ready, 5*time.Second, 10*time.Millisecond, "ready again once Redis answers")
}

// TestStaysReadyThroughAnOutage: by default a replica that reached Redis
// stays ready while Redis does not answer (it serves what needs no
// Redis), and its metric says Redis is down.
func TestStaysReadyThroughAnOutage(t *testing.T) {
	redis := redistest.Start(t)
	reg := prometheus.NewRegistry()
	s, err := redisshare.Open(t.Context(), redisshare.Config{URL: redis.URL(), ClusterKey: redistest.ClusterKey(), Registerer: reg})
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Close()) }()
	require.True(t, s.Ready())

	redis.Kill()
	require.Eventually(t, func() bool { return gauge(t, reg, "mcp_server_redis_up") == 0 }, 3*time.Second, 10*time.Millisecond, "the metric sees Redis down")
	assert.True(t, s.Ready(), "still ready: the fleet keeps serving")
	redis.Restart()
	require.Eventually(t, func() bool { return gauge(t, reg, "mcp_server_redis_up") == 1 }, 3*time.Second, 10*time.Millisecond)
}

// TestStartsWhileRedisIsAway: a replica opened before Redis runs starts
// not ready, and is ready within 2 s of Redis answering.
func TestStartsWhileRedisIsAway(t *testing.T) {
	redis := redistest.Start(t)
	redis.Kill()
	s, err := redisshare.Open(t.Context(), redisshare.Config{URL: redis.URL(), ClusterKey: redistest.ClusterKey()})
	require.NoError(t, err, "Redis away is no reason to exit")
	defer func() { assert.NoError(t, s.Close()) }()
	assert.False(t, s.Ready())

	redis.Restart() // returns once Redis answers INFO
	answering := time.Now()
	for !s.Ready() && time.Since(answering) < 5*time.Second {
		time.Sleep(5 * time.Millisecond) // polling Ready, as a readiness probe does
	}
	took := time.Since(answering)
	t.Logf("ready %v after Redis answered", took.Round(time.Millisecond))
	assert.Less(t, took, 2*time.Second, "ready within 2 s of Redis answering")
}

// gauge is the value of the metric name in reg (0 when absent).
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}
