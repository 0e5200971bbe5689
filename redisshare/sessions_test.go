package redisshare

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// openReplicas opens n replicas' shared modes on rs.
func openReplicas(t *testing.T, rs *redistest.Server, n int) []*Shared {
	t.Helper()
	var out []*Shared
	for range n {
		s, err := Open(t.Context(), Config{URL: rs.URL(), ClusterKey: redistest.ClusterKey()})
		require.NoError(t, err)
		s.store.SetSessionTimeouts(time.Hour, 0) // as an endpoint of idle timeout an hour does (streamable.New)
		t.Cleanup(func() { _ = s.Close() })
		out = append(out, s)
	}
	return out
}

// TestSessionCounterAcrossReplicas: three replicas' counters hold one
// principal to its quota together; another principal is apart; a release
// on any replica frees a place; acquiring a counted session again is ok.
func TestSessionCounterAcrossReplicas(t *testing.T) {
	rs := redistest.Start(t)
	var counters []*sessionCounter
	for _, s := range openReplicas(t, rs, 3) {
		counters = append(counters, s.sessionCounter(4))
	}
	ctx := t.Context()
	admitted := 0
	for i := range 12 {
		ok, retry, err := counters[i%3].Acquire(ctx, "alice", "s"+string(rune('a'+i)))
		require.NoError(t, err)
		if ok {
			admitted++
			assert.Zero(t, retry)
		} else {
			assert.InDelta(t, time.Hour, retry, float64(time.Minute), "the oldest expires after the idle timeout")
		}
	}
	assert.Equal(t, 4, admitted, "one quota over three replicas")
	n, err := counters[0].Count(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, int64(4), n)

	ok, _, err := counters[2].Acquire(ctx, "alice", "sa")
	require.NoError(t, err)
	assert.True(t, ok, "a counted session is refreshed, not refused")
	ok, _, err = counters[1].Acquire(ctx, "bob", "sx")
	require.NoError(t, err)
	assert.True(t, ok, "another principal has its own count")

	require.NoError(t, counters[1].Release(ctx, "alice", "sa")) // opened through replica 0
	ok, _, err = counters[2].Acquire(ctx, "alice", "new")
	require.NoError(t, err)
	assert.True(t, ok, "a release anywhere frees a place")
	ok, _, err = counters[0].Acquire(ctx, "alice", "newer")
	require.NoError(t, err)
	assert.False(t, ok)
}

// TestSessionCounterHeals: entries a dead replica never released (written
// here as expired) no longer count; concurrent acquisitions never exceed
// the quota; a long principal has a short key.
func TestSessionCounterHeals(t *testing.T) {
	rs := redistest.Start(t)
	c := openReplicas(t, rs, 1)[0].sessionCounter(3)
	rdb := rs.Client(t)
	ctx := t.Context()
	now, err := rdb.Time(ctx).Result()
	require.NoError(t, err)
	past := float64(now.Add(-time.Second).UnixMilli())
	carol := c.key("carol")
	require.NoError(t, rdb.ZAdd(ctx, carol, redis.Z{Score: past, Member: "dead1"}, redis.Z{Score: past, Member: "dead2"}, redis.Z{Score: past, Member: "dead3"}).Err())

	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	var errs []error
	start := make(chan struct{})
	for i := range 20 {
		wg.Go(func() {
			<-start
			ok, _, err := c.Acquire(ctx, "carol", "live"+string(rune('a'+i)))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				admitted++
			}
		})
	}
	close(start)
	wg.Wait()
	require.Empty(t, errs)
	assert.Equal(t, 3, admitted, "the dead replica's sessions expired; the quota holds under concurrency")

	long := strings.Repeat("p", 100_000)
	ok, _, err := c.Acquire(ctx, long, "s1")
	require.NoError(t, err)
	assert.True(t, ok)
	keys, err := rdb.Keys(ctx, "vigil:sessions:*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		assert.LessOrEqual(t, len(k), 100, "key %.40q...", k)
	}
	ttl, err := rdb.PTTL(ctx, carol).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 59*time.Minute, "the set expires with its newest entry")
}

// TestSessionQuota: the endpoint's session quota counts on Redis, and a
// release, which the endpoint makes without a context, frees a place.
func TestSessionQuota(t *testing.T) {
	rs := redistest.Start(t)
	q := openReplicas(t, rs, 1)[0].SessionQuota(2)
	ctx := t.Context()
	for i, want := range []bool{true, true, false} {
		ok, err := q.Acquire(ctx, "dave", "s"+string(rune('a'+i)), 2)
		require.NoError(t, err)
		assert.Equal(t, want, ok, "session %d", i)
	}
	q.Release("dave", "sa")
	ok, err := q.Acquire(ctx, "dave", "sc", 2)
	require.NoError(t, err)
	assert.True(t, ok, "the release freed a place")
}
