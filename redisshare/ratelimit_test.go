package redisshare_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/redisshare"
)

// TestAllowShared runs two replicas' rate limits on one real Redis:
// together they admit one burst of a key, not one each, and say how long
// until the next token; another key has its own bucket. A decision Redis
// does not take in time is an error, counted as a fallback (the
// middleware's test has what its limiter does then).
func TestAllowShared(t *testing.T) {
	rs := redistest.Start(t)
	reg := prometheus.NewRegistry()
	var replicas []*redisshare.Shared
	for i := range 2 {
		cfg := redisshare.Config{URL: rs.URL(), ClusterKey: redistest.ClusterKey()}
		if i == 0 {
			cfg.Registerer = reg // the first replica's fallbacks are counted
		}
		s, err := redisshare.Open(t.Context(), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		replicas = append(replicas, s)
	}
	const burst = 5
	admitted := func(key string, n int) (ok int, retry time.Duration) {
		for i := range n {
			allowed, after, err := replicas[i%2].Allow(t.Context(), key, 0.0001, burst)
			require.NoError(t, err)
			if allowed {
				ok++
			} else {
				retry = after
			}
		}
		return ok, retry
	}
	ok, retry := admitted("p:192.0.2.1", 4*burst)
	assert.Equal(t, burst, ok, "two replicas share one bucket")
	assert.Greater(t, retry, time.Minute, "the next token is hours away at this rate")
	ok, _ = admitted("p:192.0.2.2", 1)
	assert.Equal(t, 1, ok, "another key, another bucket")

	fallbacks := func() float64 {
		f, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range f {
			if mf.GetName() == mcpconv.MetricRateLimitFallbacks {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatalf("no %s", mcpconv.MetricRateLimitFallbacks)
		return 0
	}
	assert.Zero(t, fallbacks())
	late, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	_, _, err := replicas[0].Allow(late, "p:192.0.2.9", 1, 1)
	require.Error(t, err)
	assert.InDelta(t, 1, fallbacks(), 0, "the decision Redis did not take is counted")
}
