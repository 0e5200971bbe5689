package redisshare_test

import (
	"bytes"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/redisshare"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/transport/streamable/redisstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOpenTakesTheLeaseAndCloseGivesItBack(t *testing.T) {
	redis := redistest.Start(t)
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	s, err := redisshare.Open(t.Context(), redisshare.Config{
		URL: redis.URL(), IdleTimeout: time.Minute, ClusterKey: redistest.ClusterKey(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Registerer: reg,
	})
	require.NoError(t, err)
	assert.True(t, s.Ready(), "Redis answered the first renewal")
	assert.Len(t, s.Options(), 3, "cluster, event store, lost-request hook")
	assert.Len(t, s.ServerOptions(), 2, "task id prefix, fanout")
	assert.Contains(t, logs.String(), "replica="+s.Store.Replica())
	assert.Contains(t, logs.String(), "redis="+redis.Addr()+"/0")

	observer, err := redisstore.New(t.Context(), redis.Client(t), redisstore.WithClusterKey(redistest.ClusterKey(), nil))
	require.NoError(t, err)
	defer func() { assert.NoError(t, observer.Close()) }()
	alive, err := observer.Alive(t.Context(), s.Store.Replica())
	require.NoError(t, err)
	assert.True(t, alive, "the other replicas see this one alive")

	families, err := reg.Gather()
	require.NoError(t, err)
	assert.NotEmpty(t, families)

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "a second Close does nothing")
	alive, err = observer.Alive(t.Context(), s.Store.Replica())
	require.NoError(t, err)
	assert.False(t, alive, "a clean exit releases the lease")
}

func TestOpenNeverShowsThePassword(t *testing.T) {
	const secret = "s3cr3t-Pa55"
	// A URL that does not parse: the error names it without repeating it.
	_, err := redisshare.Open(t.Context(), redisshare.Config{URL: "redis://user:" + secret + "@host:notaport/0"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), secret)

	// A server that is not there: the error names the address, not the
	// credentials.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	var logs bytes.Buffer
	_, err = redisshare.Open(t.Context(), redisshare.Config{
		URL:        "redis://user:" + secret + "@" + addr + "/2",
		ClusterKey: redistest.ClusterKey(),
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), addr+"/2")
	assert.NotContains(t, err.Error(), secret)
	assert.NotContains(t, logs.String(), secret)
}
