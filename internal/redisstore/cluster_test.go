package redisstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// clusterStores returns n Stores, each with its own client of a 6-node
// Redis Cluster (3 primaries, 3 replicas) started for t, and an
// administrator's client of the Cluster.
func clusterStores(t *testing.T, n int) ([]*redisstore.Store, *redis.ClusterClient) {
	t.Helper()
	nodes := redistest.StartClusterWithReplicas(t, 3, 1)
	seeds := make([]string, len(nodes))
	for i, node := range nodes {
		seeds[i] = node.Addr()
	}
	newClient := func() *redis.ClusterClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	stores := make([]*redisstore.Store, n)
	for i := range stores {
		st, err := redisstore.New(t.Context(), newClient(), redisstore.WithClusterKey(redistest.ClusterKey(), nil),
			redisstore.WithReplica(fmt.Sprintf("r%d", i)), redisstore.WithIdleTimeout(time.Minute))
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, st.Close()) })
		stores[i] = st
	}
	return stores, newClient()
}

// sessionsOnEveryPrimary returns a session id whose keys and channel are
// on each primary of admin's Cluster, and the primaries' addresses.
func sessionsOnEveryPrimary(t *testing.T, admin *redis.ClusterClient) (ids, primaries []string) {
	t.Helper()
	seen := map[string]bool{}
	for i := 0; len(ids) < 3; i++ {
		require.Less(t, i, 1000, "no session on every primary")
		id := fmt.Sprintf("session-%d", i)
		node, err := admin.MasterForKey(t.Context(), "vigil:{"+sessionTag(id)+"}:r")
		require.NoError(t, err)
		if addr := node.Options().Addr; !seen[addr] {
			seen[addr] = true
			ids, primaries = append(ids, id), append(primaries, addr)
		}
	}
	return ids, primaries
}

// TestClusterConfirmationsCountEveryReplica: on a 6-node Redis Cluster,
// three replicas follow sessions whose slots are on each of the three
// primaries, each replica on its own client (so that a classic
// subscription of each would be on a node of its own). StoreState and
// Delete count both other replicas for every session, and every relay
// reaches them: the issue counted 1 of 3 with classic pub/sub, whose
// PUBSUB NUMSUB is one node's.
func TestClusterConfirmationsCountEveryReplica(t *testing.T) {
	stores, admin := clusterStores(t, 3)
	ctx := t.Context()
	ids, primaries := sessionsOnEveryPrimary(t, admin)
	got := make(chan string, 64)
	for _, id := range ids {
		require.NoError(t, stores[0].Create(ctx, id, replication.SessionRecord{Principal: "alice"}))
		for _, st := range stores {
			cancel, err := st.Subscribe(ctx, id, func(r replication.Relay) {
				got <- fmt.Sprintf("%s %s %s %s", st.Replica(), id, r.Kind, r.Data)
			})
			require.NoError(t, err)
			defer cancel()
		}
	}
	// Each session's subscriptions are on its slot's primary: the three
	// replicas there, none elsewhere.
	for i, id := range ids {
		for _, addr := range primaries {
			node := redis.NewClient(&redis.Options{Addr: addr})
			n, err := node.PubSubShardNumSub(ctx, "vigil:{"+sessionTag(id)+"}:r").Result()
			_ = node.Close()
			require.NoError(t, err)
			want := int64(0)
			if addr == primaries[i] {
				want = 3
			}
			assert.Equal(t, want, n["vigil:{"+sessionTag(id)+"}:r"], "session %d's subscribers on %s", i, addr)
		}
	}
	for _, id := range ids {
		others, err := stores[0].StoreState(ctx, id, []byte("state of "+id))
		require.NoError(t, err)
		assert.Equal(t, 2, others, "StoreState of %s counts both other replicas", id)
		seen := map[string]bool{}
		for range 3 {
			seen[recv(t, got)] = true
		}
		for _, st := range stores {
			assert.True(t, seen[fmt.Sprintf("%s %s state state of %s", st.Replica(), id, id)], "replica %s has the state of %s", st.Replica(), id)
		}
	}
	for _, id := range ids {
		others, err := stores[1].Delete(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, 2, others, "Delete of %s counts both other replicas", id)
		for range 3 {
			assert.Contains(t, recv(t, got), " "+id+" end ")
		}
		_, err = stores[2].Load(ctx, id)
		require.ErrorIs(t, err, replication.ErrUnknownSession)
	}
}

// sessionTag is a session's hash tag (see tKey).
func sessionTag(id string) string {
	k := tKey(id, "")
	return k[strings.IndexByte(k, '{')+1 : strings.IndexByte(k, '}')]
}

// recv returns what got has within 5 seconds, or fails t.
func recv[T any](t *testing.T, got <-chan T) T {
	t.Helper()
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	select {
	case v := <-got:
		return v
	case <-timer.C:
		t.Fatal("nothing within 5s")
		panic("unreachable")
	}
}
