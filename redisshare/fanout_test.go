package redisshare

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// TestBroadcastsWaitNotOnAnAbsentRedis (issue 77, V6): a replica started
// while Redis is away subscribes to the other replicas' broadcasts at once
// (the server does at start; it waited 5 s or more for each, and then had
// none for good), and a broadcast fails at once (each tool added at start
// waited seconds). Once Redis answers the subscription is asked of it, and
// another replica's broadcast arrives.
func TestBroadcastsWaitNotOnAnAbsentRedis(t *testing.T) {
	redis := redistest.Start(t)
	redis.Kill()
	a, err := Open(t.Context(), Config{URL: redis.URL(), ClusterKey: redistest.ClusterKey()})
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Close()) }()

	got := make(chan string, 16)
	start := time.Now()
	stop, err := fanout{a}.ReceiveBroadcasts(func(event []byte) { got <- string(event) })
	require.NoError(t, err, "subscribed while Redis is away: asked of Redis when it answers")
	defer stop()
	err = fanout{a}.Broadcast(t.Context(), []byte("tools"))
	took := time.Since(start)
	require.ErrorIs(t, err, errNotAnswering)
	t.Logf("subscribe and broadcast while Redis is away: %v", took.Round(time.Millisecond))
	assert.Less(t, took, 100*time.Millisecond, "neither waits on Redis")

	redis.Restart()
	b, err := Open(t.Context(), Config{URL: redis.URL(), ClusterKey: redistest.ClusterKey()})
	require.NoError(t, err)
	defer func() { assert.NoError(t, b.Close()) }()
	require.True(t, b.Ready())
	deadline := time.After(5 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond) // b broadcasts until a's subscription is on Redis
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_ = fanout{b}.Broadcast(ctx, []byte("prompts"))
		cancel()
		select {
		case ev := <-got:
			assert.Equal(t, "prompts", ev)
			return
		case <-deadline:
			t.Fatal("the subscription made while Redis was away never reached Redis")
		case <-tick.C:
		}
	}
}
