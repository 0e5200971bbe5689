package redisstore_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// TestSubscribeWhileRedisDoesNotAnswer: while WithAnswering says Redis
// does not answer, Subscribe returns at once and asks nothing of Redis;
// SubscribePending then asks Redis for the subscriptions that stand (a
// relay reaches them) and not for those cancelled meanwhile (Redis counts
// no subscriber of theirs).
func TestSubscribeWhileRedisDoesNotAnswer(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	var answering atomic.Bool
	a, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica("a"))
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Close()) }()
	b, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica("b"),
		redisstore.WithAnswering(answering.Load))
	require.NoError(t, err)
	defer func() { assert.NoError(t, b.Close()) }()
	ctx := t.Context()

	got := make(chan replication.Relay, 4)
	stop, err := b.Subscribe(ctx, "s1", func(r replication.Relay) { got <- r })
	require.NoError(t, err, "returns at once, the subscription pending")
	defer stop()
	cancelled, err := b.Subscribe(ctx, "s2", func(replication.Relay) { t.Error("a cancelled subscription delivered") })
	require.NoError(t, err)
	cancelled()
	assert.Zero(t, numSub(t, rdb, tChannel("s1")), "nothing asked of Redis while it does not answer")

	answering.Store(true)
	require.NoError(t, b.SubscribePending(ctx))
	// SubscribePending asks; Redis counts the subscriber once it did.
	require.Eventually(t, func() bool { return numSub(t, rdb, tChannel("s1")) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, a.Publish(ctx, "s1", replication.Relay{Kind: replication.RelayClient, From: "a", Data: []byte("x")}))
	assert.Equal(t, "x", string((<-got).Data))
	assert.Zero(t, numSub(t, rdb, tChannel("s2")), "the cancelled one is not asked of Redis")
	require.NoError(t, b.SubscribePending(ctx), "nothing pending: nothing to do")
}

// tChannel is the channel of session id under the default prefix.
func tChannel(id string) string {
	return "vigil:" + strings.TrimPrefix(tKey(id, ":r"), "t:")
}

// numSub is how many clients Redis counts subscribed to ch.
func numSub(t *testing.T, rdb *redis.Client, ch string) int64 {
	t.Helper()
	n, err := rdb.PubSubNumSub(t.Context(), ch).Result()
	require.NoError(t, err)
	return n[ch]
}
