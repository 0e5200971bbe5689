package redisstore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// TestReplicaAcks: with WithReplicaAcks, a state change is answered once
// the replica has it; without a replica in reach it waits the timeout,
// goes on, and the observer counts it.
func TestReplicaAcks(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	var unacked int
	st, err := redisstore.New(t.Context(), primary.Client(t), redisstore.WithClusterKey(redistest.ClusterKey(), nil),
		redisstore.WithReplicaAcks(1, 200*time.Millisecond),
		redisstore.WithObserver(func(op string, _ time.Duration, err error) {
			if op == "replica_ack" && err != nil {
				unacked++
			}
		}))
	require.NoError(t, err)
	defer func() { assert.NoError(t, st.Close()) }()
	ctx := t.Context()
	require.NoError(t, st.Create(ctx, "s1", replication.SessionRecord{Principal: "p"}))
	_, err = st.StoreState(ctx, "s1", []byte("state"))
	require.NoError(t, err)
	require.NoError(t, st.Touch(ctx, "s1"))
	assert.Zero(t, unacked)
	n, err := replica.Client(t).Exists(ctx, "vigil:{"+tagOf(t, primary)+"}:s").Result()
	require.NoError(t, err)
	assert.EqualValues(t, 1, n, "the replica has the record when StoreState returns")

	replica.Kill()
	start := time.Now()
	_, err = st.StoreState(ctx, "s1", []byte("state 2"))
	require.NoError(t, err, "no replica: the write goes on")
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "after the timeout")
	assert.Equal(t, 1, unacked, "counted")
}

// tagOf finds the hash tag of the only session record on primary.
func tagOf(t *testing.T, primary *redistest.Server) string {
	t.Helper()
	keys, err := primary.Client(t).Keys(t.Context(), "vigil:*:s").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	k := keys[0]
	return k[len("vigil:{") : len(k)-len("}:s")]
}

// BenchmarkStoreStateReplicaAcks: what WAIT for one replica adds to a
// state change (the handshake's), on loopback.
func BenchmarkStoreStateReplicaAcks(b *testing.B) {
	primary := redistest.Start(b)
	redistest.StartReplica(b, primary)
	for _, acks := range []int{0, 1} {
		b.Run("acks="+strconv.Itoa(acks), func(b *testing.B) {
			st, err := redisstore.New(b.Context(), primary.Client(b), redisstore.WithClusterKey(redistest.ClusterKey(), nil),
				redisstore.WithReplicaAcks(acks, time.Second))
			require.NoError(b, err)
			defer func() { _ = st.Close() }()
			require.NoError(b, st.Create(b.Context(), "s"+strconv.Itoa(acks), replication.SessionRecord{Principal: "p"}))
			b.ResetTimer()
			for b.Loop() {
				if _, err := st.StoreState(b.Context(), "s"+strconv.Itoa(acks), []byte("state")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
