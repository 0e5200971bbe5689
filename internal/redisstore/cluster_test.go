package redisstore_test

import (
	"fmt"
	"strings"
	"sync"
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

// clusterStores returns n Stores, each with its own client of a 6-node
// Redis Cluster (3 primaries, 3 replicas) started for t, whose writes wait
// for a replica (as vigil's), and an administrator's client of the
// Cluster. unacked counts the writes no replica acknowledged in time.
func clusterStores(t *testing.T, n int) (stores []*redisstore.Store, admin *redis.ClusterClient, unacked *atomic.Int64) {
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
	unacked = new(atomic.Int64)
	observe := func(op string, _ time.Duration, err error) {
		if op == "replica_ack" && err != nil {
			unacked.Add(1)
		}
	}
	stores = make([]*redisstore.Store, n)
	for i := range stores {
		st, err := redisstore.New(t.Context(), newClient(), redisstore.WithClusterKey(redistest.ClusterKey(), nil),
			redisstore.WithReplica(fmt.Sprintf("r%d", i)),
			redisstore.WithReplicaAcks(1, time.Second), redisstore.WithObserver(observe))
		require.NoError(t, err)
		st.SetSessionTimeouts(time.Minute, 0)
		t.Cleanup(func() { assert.NoError(t, st.Close()) })
		stores[i] = st
	}
	return stores, newClient(), unacked
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
// PUBSUB NUMSUB is one node's. Each write WAITs on its own primary's
// connection, and a replica acknowledges it.
func TestClusterConfirmationsCountEveryReplica(t *testing.T) {
	stores, admin, unacked := clusterStores(t, 3)
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
	assert.Zero(t, unacked.Load(), "writes no replica acknowledged")
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

// sessionsOn returns n session ids whose slots are on the primary addr
// of admin's Cluster, and their slots.
func sessionsOn(t *testing.T, admin *redis.ClusterClient, addr string, n int) (ids []string, slots map[int64]bool) {
	t.Helper()
	slots = map[int64]bool{}
	for i := 0; len(ids) < n; i++ {
		require.Less(t, i, 100*n, "too few sessions on %s", addr)
		id := fmt.Sprintf("moving-%d", i)
		ch := "vigil:{" + sessionTag(id) + "}:r"
		node, err := admin.MasterForKey(t.Context(), ch)
		require.NoError(t, err)
		if node.Options().Addr == addr {
			ids = append(ids, id)
			slot, err := admin.ClusterKeySlot(t.Context(), ch).Result()
			require.NoError(t, err)
			slots[slot] = true
		}
	}
	return ids, slots
}

// migrateSlot moves slot from the primary at from to the one at to, as
// redis-cli --cluster reshard does: IMPORTING on to, MIGRATING on from,
// MIGRATE of its keys a few at a time, then the slot's new owner told to
// both and to every other primary.
func migrateSlot(t *testing.T, slot int64, from, to string, primaries []string) {
	t.Helper()
	ctx := t.Context()
	src, dst := redis.NewClient(&redis.Options{Addr: from}), redis.NewClient(&redis.Options{Addr: to})
	defer func() { _, _ = src.Close(), dst.Close() }()
	srcID, err := src.Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	dstID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	require.NoError(t, dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	require.NoError(t, src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	host, port, _ := strings.Cut(to, ":")
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, int(slot), 2).Result()
		require.NoError(t, err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		require.NoError(t, src.Do(ctx, args...).Err())
	}
	for _, addr := range append([]string{to, from}, primaries...) {
		c := redis.NewClient(&redis.Options{Addr: addr})
		err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err()
		_ = c.Close()
		require.NoError(t, err)
	}
}

// TestClusterSlotMigrationLosesNothing: every slot of 12 sessions moves
// from one primary to another while three replicas store states in them,
// relay messages to one another and load them. No operation fails (the
// client follows ASK and MOVED), every relay reaches all three replicas
// (the relays are classic PUBLISH, which no slot's owner carries alone),
// every session ends with its last state, and once the slots moved both
// other replicas are counted again (their sharded subscriptions followed
// their slots).
func TestClusterSlotMigrationLosesNothing(t *testing.T) {
	stores, admin, _ := clusterStores(t, 3)
	ctx := t.Context()
	_, primaries := sessionsOnEveryPrimary(t, admin)
	ids, slots := sessionsOn(t, admin, primaries[0], 12)
	var mu sync.Mutex
	received := map[string]int{} // replica and relay → times received
	for _, id := range ids {
		require.NoError(t, stores[0].Create(ctx, id, replication.SessionRecord{Principal: "alice"}))
		require.NoError(t, stores[0].Touch(ctx, id))
		for _, st := range stores {
			cancel, err := st.Subscribe(ctx, id, func(r replication.Relay) {
				mu.Lock()
				received[st.Replica()+" "+r.Kind.String()+" "+string(r.Data)]++
				mu.Unlock()
			})
			require.NoError(t, err)
			defer cancel()
		}
	}

	moved := make(chan struct{})
	var ops atomic.Int64               // operations of the traffic so far
	progress := make(chan struct{}, 1) // an operation was made
	var failures []error
	sent, states, undercounted := 0, map[string]string{}, 0
	traffic := make(chan struct{})
	go func() {
		defer close(traffic)
		for i := 0; ; i++ {
			select {
			case <-moved:
				return
			default:
			}
			ops.Add(1)
			select {
			case progress <- struct{}{}:
			default:
			}
			id, st := ids[i%len(ids)], stores[i%len(stores)]
			data := fmt.Sprintf("%s #%d", id, i)
			if err := st.Publish(ctx, id, replication.Relay{Kind: replication.RelayClient, From: st.Replica(), Data: []byte(data)}); err != nil {
				failures = append(failures, err)
				continue
			}
			sent++
			others, err := st.StoreState(ctx, id, []byte(data))
			if err != nil {
				failures = append(failures, err)
				continue
			}
			states[id] = data
			if others < 2 {
				undercounted++
			}
			if _, err := stores[(i+1)%len(stores)].Load(ctx, id); err != nil {
				failures = append(failures, err)
			}
		}
	}()
	start := time.Now()
	k := int64(0)
	for slot := range slots {
		// Each slot moves after ten more operations, whatever the
		// machine's speed: the traffic runs through the whole migration.
		for k++; ops.Load() < 10*k; {
			<-progress
		}
		migrateSlot(t, slot, primaries[0], primaries[1], primaries)
	}
	took := time.Since(start)
	close(moved)
	<-traffic
	require.Empty(t, failures)
	t.Logf("%d slots moved in %v under %d relays and as many states; %d states counted fewer than 2 others", len(slots), took, sent, undercounted)

	// Every relay (each published data, and each state) reaches all three.
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		total, twice := 0, 0
		for _, n := range received {
			total += n
			twice += n - 1
		}
		mu.Unlock()
		// Each relay and each state reaches every replica, once.
		if total >= 2*sent*len(stores) || time.Now().After(deadline) {
			assert.Equal(t, 2*sent*len(stores), total, "relays received")
			assert.Zero(t, twice, "relays received twice")
			break
		}
		time.Sleep(10 * time.Millisecond) // the relays' delivery has no event to wait on here
	}
	for id, want := range states {
		rec, err := stores[2].Load(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, want, string(rec.State), "session %s keeps its last state", id)
	}
	// The sharded subscriptions follow the slots: both others counted again.
	for _, id := range ids {
		deadline := time.Now().Add(5 * time.Second)
		for {
			others, err := stores[0].StoreState(ctx, id, []byte("after"))
			require.NoError(t, err)
			if others == 2 || time.Now().After(deadline) {
				assert.Equal(t, 2, others, "session %s: both other replicas counted after the move", id)
				break
			}
			time.Sleep(20 * time.Millisecond) // re-subscription has no event to wait on here
		}
	}
}
