package redisstore_test

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newStore returns a Store on a fresh redis-server, closed when t ends,
// and a client of that server for looking at the keys.
func newStore(t *testing.T, opts ...redisstore.Option) (*redisstore.Store, *redis.Client) {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	st, err := redisstore.New(t.Context(), rdb, append([]redisstore.Option{redisstore.WithClusterKey(redistest.ClusterKey(), nil)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, st.Close()) })
	return st, rdb
}

func TestSessionRecordLifecycle(t *testing.T) {
	st, rdb := newStore(t, redisstore.WithPrefix("t:"))
	st.SetSessionTimeouts(time.Minute, 0)
	ctx := t.Context()

	require.NoError(t, st.Create(ctx, "s1", replication.SessionRecord{Principal: "alice"}))
	require.Error(t, st.Create(ctx, "s1", replication.SessionRecord{Principal: "mallory"}), "an id is created once")
	rec, err := st.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, replication.SessionRecord{Principal: "alice"}, rec, "the first creator keeps the id")

	ttl := rdb.PTTL(ctx, tKey("s1", ":s")).Val()
	assert.Greater(t, ttl, 50*time.Second, "the record expires after the idle timeout")
	assert.LessOrEqual(t, ttl, time.Minute)
	require.NoError(t, rdb.PExpire(ctx, tKey("s1", ":s"), time.Second).Err())
	require.NoError(t, st.Touch(ctx, "s1"))
	assert.Greater(t, rdb.PTTL(ctx, tKey("s1", ":s")).Val(), 50*time.Second, "Touch restarts the idle clock")

	_, err = st.StoreState(ctx, "s1", []byte(`{"v":1}`))
	require.NoError(t, err)
	rec, err = st.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, `{"v":1}`, string(rec.State))

	_, err = st.Delete(ctx, "s1")
	require.NoError(t, err)
	_, err = st.Load(ctx, "s1")
	require.ErrorIs(t, err, replication.ErrUnknownSession)
	require.ErrorIs(t, st.Touch(ctx, "s1"), replication.ErrUnknownSession)
	_, err = st.StoreState(ctx, "s1", []byte(`{"v":2}`))
	require.ErrorIs(t, err, replication.ErrUnknownSession, "a deleted record is never recreated by its state")
	assert.Zero(t, rdb.Exists(ctx, tKey("s1", ":s")).Val())
}

func TestPrefixesKeepStoresApart(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	a, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithPrefix("a:"))
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Close()) }()
	b, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithPrefix("b:"))
	require.NoError(t, err)
	defer func() { assert.NoError(t, b.Close()) }()

	require.NoError(t, a.Create(t.Context(), "s", replication.SessionRecord{Principal: "p"}))
	_, err = b.Load(t.Context(), "s")
	require.ErrorIs(t, err, replication.ErrUnknownSession)
	require.NoError(t, b.Create(t.Context(), "s", replication.SessionRecord{Principal: "q"}), "the same id under another prefix")
}

func TestEventsReplayAndForget(t *testing.T) {
	st, rdb := newStore(t, redisstore.WithPrefix("t:"))
	ctx := t.Context()

	var ids []string
	for _, d := range []string{"one", "two", "three"} {
		id, err := st.Append(ctx, "s1", "post-7", []byte(d))
		require.NoError(t, err)
		ids = append(ids, id)
	}
	_, err := st.Append(ctx, "s1", "bad~key", []byte("x"))
	require.Error(t, err, "'~' separates the stream from the entry in an event id")

	stream, events, err := st.Replay(ctx, "s1", ids[0])
	require.NoError(t, err)
	assert.Equal(t, "post-7", stream)
	require.Len(t, events, 2)
	assert.Equal(t, ids[1], events[0].ID)
	assert.Equal(t, "two", string(events[0].Data))
	assert.Equal(t, "three", string(events[1].Data))

	_, events, err = st.Replay(ctx, "s1", ids[2])
	require.NoError(t, err)
	assert.Empty(t, events, "nothing after the last event")

	for _, bad := range []string{"no-tilde", "post-8~0-1"} {
		_, _, err = st.Replay(ctx, "s1", bad)
		require.ErrorIs(t, err, replication.ErrUnknownEvent, bad)
	}

	require.NoError(t, st.Forget(ctx, "s1"))
	_, _, err = st.Replay(ctx, "s1", ids[0])
	require.ErrorIs(t, err, replication.ErrUnknownEvent)
	assert.Empty(t, rdb.Keys(ctx, tKey("s1", ":e*")).Val(), "every event key is gone")
}

func TestRelaysReachSubscribersOnly(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	a, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica("a"))
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Close()) }()
	b, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica("b"))
	require.NoError(t, err)
	defer func() { assert.NoError(t, b.Close()) }()
	ctx := t.Context()

	got := make(chan replication.Relay, 4)
	cancel, err := b.Subscribe(ctx, "s1", func(r replication.Relay) { got <- r })
	require.NoError(t, err)

	require.NoError(t, a.Create(ctx, "s1", replication.SessionRecord{}))
	require.NoError(t, a.Publish(ctx, "s1", replication.Relay{Kind: replication.RelayClient, From: "a", Data: []byte(`{"jsonrpc":"2.0","method":"x"}`)}))
	r := <-got
	assert.Equal(t, replication.Relay{Kind: replication.RelayClient, From: "a", Data: []byte(`{"jsonrpc":"2.0","method":"x"}`)}, r)

	others, err := a.StoreState(ctx, "s1", []byte("st"))
	require.NoError(t, err)
	assert.Equal(t, 1, others, "b follows the session; a does not count itself")
	r = <-got
	assert.Equal(t, replication.RelayState, r.Kind)
	assert.Equal(t, "st", string(r.Data))

	// After cancel nothing of s1 reaches b. A relay of s2, which b still
	// follows, published once Delete's publish of s1 has returned, is the
	// barrier: Redis handled the two publishes in that order, and b's one
	// subscriber connection receives them so.
	barrier := make(chan replication.Relay, 1)
	cancel2, err := b.Subscribe(ctx, "s2", func(r replication.Relay) { barrier <- r })
	require.NoError(t, err)
	defer cancel2()
	cancel()
	_, err = a.Delete(ctx, "s1")
	require.NoError(t, err)
	require.NoError(t, a.Publish(ctx, "s2", replication.Relay{Kind: replication.RelayClient, From: "a", Data: []byte("after")}))
	assert.Equal(t, "after", string((<-barrier).Data))
	select {
	case r := <-got:
		t.Fatalf("a relay of s1 after cancel: %+v", r)
	default:
	}
}

// TestPatternSubscribersAreNotReplicas: StoreState and Delete count the
// replicas following a session, which the caller then waits for (each
// acknowledges the state or end it received). A pattern subscriber on the
// same Redis (redis-cli's PSUBSCRIBE *, a monitoring tool) receives the
// relay too but never acknowledges it: counted, it made every state
// change wait out its acknowledgement.
func TestPatternSubscribersAreNotReplicas(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	a, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica("a"))
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Close()) }()
	b, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica("b"))
	require.NoError(t, err)
	defer func() { assert.NoError(t, b.Close()) }()
	ctx := t.Context()

	spy := rdb.PSubscribe(ctx, "*")
	defer func() { assert.NoError(t, spy.Close()) }()
	_, err = spy.Receive(ctx) // subscribed
	require.NoError(t, err)
	seen := spy.Channel()

	require.NoError(t, a.Create(ctx, "s1", replication.SessionRecord{}))
	cancelA, err := a.Subscribe(ctx, "s1", func(replication.Relay) {})
	require.NoError(t, err)
	defer cancelA()
	others, err := a.StoreState(ctx, "s1", []byte("st"))
	require.NoError(t, err)
	<-seen // the pattern subscriber received the relay
	assert.Equal(t, 0, others, "only a follows the session: the pattern subscriber is no replica")

	cancelB, err := b.Subscribe(ctx, "s1", func(replication.Relay) {})
	require.NoError(t, err)
	defer cancelB()
	others, err = a.StoreState(ctx, "s1", []byte("st2"))
	require.NoError(t, err)
	<-seen
	assert.Equal(t, 1, others, "b follows the session")

	others, err = a.Delete(ctx, "s1")
	require.NoError(t, err)
	<-seen
	assert.Equal(t, 1, others, "the end reached b; the pattern subscriber is no replica")
}

func TestLeasesAndClaims(t *testing.T) {
	st, rdb := newStore(t, redisstore.WithReplica("r1"), redisstore.WithPrefix("t:"))
	ctx := t.Context()

	alive, err := st.Alive(ctx, "r1")
	require.NoError(t, err)
	assert.False(t, alive, "no lease before the first renewal")
	require.NoError(t, st.RenewLease(ctx, time.Minute))
	alive, err = st.Alive(ctx, "r1")
	require.NoError(t, err)
	assert.True(t, alive)
	require.NoError(t, st.ReleaseLease(ctx))
	alive, err = st.Alive(ctx, "r1")
	require.NoError(t, err)
	assert.False(t, alive)

	first, err := st.Claim(ctx, "s1", "answer-4")
	require.NoError(t, err)
	assert.True(t, first)
	first, err = st.Claim(ctx, "s1", "answer-4")
	require.NoError(t, err)
	assert.False(t, first, "a name is claimed once")
	assert.Equal(t, []string{tKey("s1", ":claim:"+tStream("answer-4"))}, rdb.Keys(ctx, "*").Val(),
		"the claim's key carries the tags of the session and of the name, neither in clear")
}

// A requestState is used once over every replica of one Redis, and its
// record expires with it.
func TestUseRequestStateOnce(t *testing.T) {
	st, rdb := newStore(t, redisstore.WithReplica("r1"))
	other, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica("r2"))
	require.NoError(t, err)
	defer func() { assert.NoError(t, other.Close()) }()
	ctx := t.Context()

	first, err := st.UseRequestState(ctx, "00ff", time.Minute)
	require.NoError(t, err)
	assert.True(t, first)
	first, err = other.UseRequestState(ctx, "00ff", time.Minute)
	require.NoError(t, err)
	assert.False(t, first, "used already, on another replica")
	ttl, err := rdb.PTTL(ctx, "vigil:state:00ff").Result()
	require.NoError(t, err)
	assert.InDelta(t, time.Minute, ttl, float64(5*time.Second), "the record expires with the state")
}

// A DPoP proof is used once over every replica of one Redis, under a key
// that tells nothing of its digest, expiring with its window.
func TestUseDPoPProofOnce(t *testing.T) {
	st, rdb := newStore(t, redisstore.WithReplica("r1"))
	other, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica("r2"))
	require.NoError(t, err)
	defer func() { assert.NoError(t, other.Close()) }()
	ctx := t.Context()

	const digest = "6a09e667f3bcc908b2fb1366ea957d3e3adec17512775099da2f590b0667322a"
	first, err := st.UseDPoPProof(ctx, digest, time.Minute)
	require.NoError(t, err)
	assert.True(t, first)
	first, err = other.UseDPoPProof(ctx, digest, time.Minute)
	require.NoError(t, err)
	assert.False(t, first, "used already, on another replica")
	keys := rdb.Keys(ctx, "*").Val()
	var proofKeys []string
	for _, k := range keys {
		if strings.HasPrefix(k, "vigil:dpop:") {
			proofKeys = append(proofKeys, k)
		}
		assert.NotContains(t, k, digest, "no key holds the digest in clear")
	}
	require.Len(t, proofKeys, 1)
	ttl, err := rdb.PTTL(ctx, proofKeys[0]).Result()
	require.NoError(t, err)
	assert.InDelta(t, time.Minute, ttl, float64(5*time.Second), "the record expires with the proof's window")
}

func TestNewRefusesBadReplicaNames(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	for _, name := range []string{"a.b", "a~b", "a b", "é"} {
		_, err := redisstore.New(t.Context(), rdb, redisstore.WithClusterKey(redistest.ClusterKey(), nil), redisstore.WithReplica(name))
		require.Error(t, err, name)
	}
}

// tKey is the key (or pattern) named suffix of session id under the prefix
// "t:": the session's tag, the SHA-256 of the id, as the hash tag.
func tKey(id, suffix string) string {
	sum := sha256.Sum256([]byte("vigil session\n" + id))
	return "t:{" + base64.RawURLEncoding.EncodeToString(sum[:]) + "}" + suffix
}

// tStream returns the tag Redis sees of a stream's name: its SHA-256.
func tStream(name string) string {
	sum := sha256.Sum256([]byte("vigil stream\n" + name))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
