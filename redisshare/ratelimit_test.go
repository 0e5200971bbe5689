package redisshare_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/redisshare"
)

// TestRateLimiterShared runs two replicas' limiters on one real Redis:
// together they admit one burst of a principal, not one each. A decision
// Redis does not take in time is an error, counted as a fallback (the
// middleware's test has what the limiter does then).
func TestRateLimiterShared(t *testing.T) {
	rs := redistest.Start(t)
	reg := prometheus.NewRegistry()
	var replicas []*redisshare.Shared
	for i := range 2 {
		cfg := redisshare.Config{URL: rs.URL(), IdleTimeout: time.Minute, ClusterKey: redistest.ClusterKey()}
		if i == 0 {
			cfg.Registerer = reg // the first replica's fallbacks are counted
		}
		s, err := redisshare.Open(t.Context(), cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		replicas = append(replicas, s)
	}
	const burst = 5
	var handlers []http.Handler
	for _, s := range replicas {
		inst, err := middleware.NewInstrumentation(middleware.WithRateLimit(0.0001, burst),
			middleware.WithSharedRateLimits(s.RateLimiter()))
		require.NoError(t, err)
		handlers = append(handlers, inst.RateLimiter().Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	}
	admitted := func(remote string, n int) int {
		ok := 0
		for i := range n {
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.RemoteAddr = remote
			w := httptest.NewRecorder()
			handlers[i%2].ServeHTTP(w, r)
			if w.Code == http.StatusOK {
				ok++
			}
		}
		return ok
	}
	fallbacks := func() float64 {
		f, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range f {
			if mf.GetName() == redisshare.MetricRateLimitFallbacks {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatalf("no %s", redisshare.MetricRateLimitFallbacks)
		return 0
	}
	assert.Equal(t, burst, admitted("192.0.2.1:1", 4*burst), "two replicas share one bucket")
	assert.Zero(t, fallbacks())

	late, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	_, _, err := replicas[0].RateLimiter().Allow(late, "p:192.0.2.9", 1, 1)
	require.Error(t, err)
	assert.Equal(t, 1.0, fallbacks(), "the decision Redis did not take is counted")
}
