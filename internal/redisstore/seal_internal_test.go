package redisstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/internal/seal"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// refusals collects what a Store refuses, for the tests to wait on.
type refusals chan string

func (r refusals) count(reason string) { r <- reason }

// next returns the next refusal, or fails t after a while.
func (r refusals) next(t *testing.T) string {
	t.Helper()
	select {
	case reason := <-r:
		return reason
	case <-time.After(10 * time.Second):
		t.Fatal("no refusal")
		return ""
	}
}

// none checks nothing more was refused.
func (r refusals) none(t *testing.T) {
	t.Helper()
	select {
	case reason := <-r:
		t.Fatalf("an unexpected refusal: %s", reason)
	default:
	}
}

func sealedStore(t *testing.T, rdb *redis.Client, name string, current, previous []byte) (*Store, refusals) {
	t.Helper()
	refused := make(refusals, 64)
	st, err := New(t.Context(), rdb, WithReplica(name), WithClusterKey(current, previous), WithRefusalCounter(refused.count))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, st.Close()) })
	return st, refused
}

func TestNewRefusesAMissingOrShortClusterKey(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	_, err := New(t.Context(), rdb)
	require.ErrorContains(t, err, "openssl rand -base64 48", "the error says how to make a key")
	_, err = New(t.Context(), rdb, WithClusterKey(make([]byte, 31), nil))
	require.ErrorContains(t, err, "at least 32 bytes")
	_, err = New(t.Context(), rdb, WithClusterKey(redistest.ClusterKey(), make([]byte, 8)))
	require.Error(t, err, "a short previous key too")
}

// TestForgedRelaysAreRefused publishes, raw, a relay of every kind on the
// channel it travels on, unsigned, signed under another key, and signed
// for another channel: each is refused as unsigned and reaches no one. A
// genuine relay published after them on the same channel is the barrier:
// the subscriber's one connection receives them in order.
func TestForgedRelaysAreRefused(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	a, _ := sealedStore(t, rdb, "a", redistest.ClusterKey(), nil)
	b, refused := sealedStore(t, rdb, "b", redistest.ClusterKey(), nil)
	ctx := t.Context()
	other, err := seal.New([]byte(strings.Repeat("another key, not the cluster's ", 2)), nil)
	require.NoError(t, err)

	handled := make(chan []byte, 8)
	stop, err := b.HandleForwarded(func(_ context.Context, req []byte) []byte { handled <- req; return []byte("ok") })
	require.NoError(t, err)
	defer stop()
	broadcasts := make(chan []byte, 8)
	cancelB, err := b.ReceiveBroadcasts(func(ev []byte) { broadcasts <- ev })
	require.NoError(t, err)
	defer cancelB()
	got := make(chan replication.Relay, 8)
	cancel, err := b.Subscribe(ctx, "s1", func(r replication.Relay) { got <- r })
	require.NoError(t, err)
	defer cancel()

	kinds := []struct {
		kind  replication.RelayKind
		topic string
		data  string
	}{
		{replication.RelayClient, "s1", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`},
		{replication.RelayStandalone, "s1", `{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{}}`},
		{replication.RelayEvent, "s1", `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{replication.RelayState, "s1", `{"state":"forged"}`},
		{replication.RelayEnd, "s1", ""},
		{replication.RelayForward, replicaTopic("b"), "1\n" + `{"jsonrpc":"2.0","id":1,"method":"tasks/get"}`},
		{replication.RelayAnswer, replicaTopic("b"), "1\n" + `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{replication.RelayBroadcast, broadcastTopic, `{"method":"notifications/tools/list_changed"}`},
	}
	for _, k := range kinds {
		ch := b.channel(k.topic)
		payload := encodeRelay(replication.Relay{Kind: k.kind, From: "a", Data: []byte(k.data)})
		forgeries := map[string][]byte{
			"unsigned":        payload,
			"another key":     other.Stamp(nil, payload, ad(domainRelay, ch), time.Now()),
			"another channel": a.keys.Stamp(nil, payload, ad(domainRelay, b.channel("s2")), time.Now()),
			"another domain":  a.keys.Stamp(nil, payload, ad(domainRecord, ch), time.Now()),
			"truncated":       a.keys.Stamp(nil, payload, ad(domainRelay, ch), time.Now())[:20],
		}
		for name, msg := range forgeries {
			require.NoError(t, rdb.Publish(ctx, ch, msg).Err())
			assert.Equal(t, RefusedUnsigned, refused.next(t), "%s relay, %s", k.kind, name)
		}
	}

	// The barriers: genuine relays of each channel, which arrive alone.
	require.NoError(t, a.Publish(ctx, "s1", replication.Relay{Kind: replication.RelayClient, From: "a", Data: []byte("genuine")}))
	assert.Equal(t, "genuine", string((<-got).Data))
	require.NoError(t, a.Broadcast(ctx, []byte("genuine")))
	assert.Equal(t, "genuine", string(<-broadcasts))
	answer, err := a.Forward(ctx, "b", []byte("genuine"))
	require.NoError(t, err)
	assert.Equal(t, "ok", string(answer))
	assert.Equal(t, "genuine", string(<-handled))
	refused.none(t)
	assert.Empty(t, got, "no forged relay reached the session's subscriber")
	assert.Empty(t, handled, "no forged request was handled")
	assert.Empty(t, broadcasts, "no forged broadcast was delivered")
}

// TestReplayedAndStaleRelaysAreRefused re-publishes a genuine relay
// captured with a raw SUBSCRIBE, and publishes relays signed under the
// cluster key with a time out of the window.
func TestReplayedAndStaleRelaysAreRefused(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	a, _ := sealedStore(t, rdb, "a", redistest.ClusterKey(), nil)
	b, refused := sealedStore(t, rdb, "b", redistest.ClusterKey(), nil)
	ctx := t.Context()
	got := make(chan replication.Relay, 8)
	cancel, err := b.Subscribe(ctx, "s1", func(r replication.Relay) { got <- r })
	require.NoError(t, err)
	defer cancel()

	spy := rdb.Subscribe(ctx, b.channel("s1"))
	defer func() { assert.NoError(t, spy.Close()) }()
	_, err = spy.Receive(ctx) // the confirmation
	require.NoError(t, err)
	require.NoError(t, a.Publish(ctx, "s1", replication.Relay{Kind: replication.RelayEnd, From: "a"}))
	assert.Equal(t, replication.RelayEnd, (<-got).Kind)
	captured, err := spy.ReceiveMessage(ctx)
	require.NoError(t, err)

	require.NoError(t, rdb.Publish(ctx, b.channel("s1"), captured.Payload).Err())
	assert.Equal(t, RefusedReplayed, refused.next(t))

	ch := b.channel("s1")
	payload := encodeRelay(replication.Relay{Kind: replication.RelayEnd, From: "a"})
	for _, when := range []time.Time{time.Now().Add(-2 * replayWindow), time.Now().Add(2 * replayWindow)} {
		require.NoError(t, rdb.Publish(ctx, ch, a.keys.Stamp(nil, payload, ad(domainRelay, ch), when)).Err())
		assert.Equal(t, RefusedStale, refused.next(t))
	}
	require.NoError(t, a.Publish(ctx, "s1", replication.Relay{Kind: replication.RelayClient, From: "a", Data: []byte("genuine")}))
	assert.Equal(t, "genuine", string((<-got).Data), "only the genuine relay arrives")
	refused.none(t)
}

// TestRecordsAreSealed swaps the fields of two sessions' records, and
// writes one in clear: each fails to load, as an unknown session.
func TestRecordsAreSealed(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	st, refused := sealedStore(t, rdb, "a", redistest.ClusterKey(), nil)
	ctx := t.Context()
	require.NoError(t, st.Create(ctx, "alice-s", replication.SessionRecord{Principal: "alice", State: []byte("alice's state")}))
	require.NoError(t, st.Create(ctx, "bob-s", replication.SessionRecord{Principal: "bob", State: []byte("bob's state")}))
	rec := rdb.HGetAll(ctx, st.recordKey("alice-s")).Val()
	assert.NotContains(t, rec["p"], "alice", "the principal is not stored in clear")
	assert.NotContains(t, rec["st"], "alice's state", "nor the state")

	// Mallory, who can write to Redis, moves her principal into bob's record.
	require.NoError(t, st.Create(ctx, "mallory-s", replication.SessionRecord{Principal: "mallory"}))
	require.NoError(t, rdb.HSet(ctx, st.recordKey("bob-s"), "p", rdb.HGet(ctx, st.recordKey("mallory-s"), "p").Val()).Err())
	_, err := st.Load(ctx, "bob-s")
	require.ErrorIs(t, err, replication.ErrUnknownSession)
	assert.Equal(t, RefusedRecord, refused.next(t))

	// A state moved from another session, and a principal in clear.
	require.NoError(t, rdb.HSet(ctx, st.recordKey("mallory-s"), "st", rec["st"]).Err())
	_, err = st.Load(ctx, "mallory-s")
	require.ErrorIs(t, err, replication.ErrUnknownSession)
	assert.Equal(t, RefusedRecord, refused.next(t))
	require.NoError(t, rdb.HSet(ctx, st.recordKey("eve-s"), "p", "alice").Err())
	_, err = st.Load(ctx, "eve-s")
	require.ErrorIs(t, err, replication.ErrUnknownSession)
	assert.Equal(t, RefusedRecord, refused.next(t))

	got, err := st.Load(ctx, "alice-s")
	require.NoError(t, err)
	assert.Equal(t, replication.SessionRecord{Principal: "alice", State: []byte("alice's state")}, got, "a genuine record opens")
	_, err = st.StoreState(ctx, "alice-s", []byte("new state"))
	require.NoError(t, err)
	assert.NotContains(t, rdb.HGet(ctx, st.recordKey("alice-s"), "st").Val(), "new state", "StoreState seals too")
	got, err = st.Load(ctx, "alice-s")
	require.NoError(t, err)
	assert.Equal(t, "new state", string(got.State))
	refused.none(t)
}

// TestEventsAreSealed checks a tool result's marker is nowhere in Redis,
// and that an event forged, or moved from another stream, is not
// replayed.
func TestEventsAreSealed(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	st, refused := sealedStore(t, rdb, "a", redistest.ClusterKey(), nil)
	ctx := t.Context()
	marker := rand.Text()
	result := []byte(`{"result":{"content":[{"type":"text","text":"` + marker + `"}]}}`)
	id1, err := st.Append(ctx, "s1", "post-1", result)
	require.NoError(t, err)
	key := st.eventsKey("s1", "post-1")
	counted, err := rdb.Get(ctx, st.bytesKey("s1")).Int()
	require.NoError(t, err)
	assert.Equal(t, streamKeyCost+2*len(key)+len(result)+seal.Overhead+EventOverhead, counted, "the bytes are counted as stored: sealed")
	other, err := st.Append(ctx, "s1", "post-2", []byte("another stream's"))
	require.NoError(t, err)
	for _, key := range rdb.Keys(ctx, "*").Val() {
		if rdb.Type(ctx, key).Val() != "stream" {
			continue
		}
		for _, e := range rdb.XRange(ctx, key, "-", "+").Val() {
			for _, v := range e.Values {
				assert.NotContains(t, v, marker, "an event is stored in clear in %s", key)
			}
		}
	}

	// Forged and moved events after the first.
	require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"d", `{"forged":true}`}}).Err())
	_, xid, _ := parseEventID(other)
	moved := rdb.XRange(ctx, st.eventsKey("s1", "post-2"), xid, xid).Val()
	require.Len(t, moved, 1)
	require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: moved[0].Values}).Err())
	id2, err := st.Append(ctx, "s1", "post-1", []byte("genuine"))
	require.NoError(t, err)

	stream, events, err := st.Replay(ctx, "s1", id1)
	require.NoError(t, err)
	assert.Equal(t, "post-1", stream)
	require.Len(t, events, 1, "the forged and the moved events are dropped")
	assert.Equal(t, replication.Event{ID: id2, Data: []byte("genuine")}, events[0])
	assert.Equal(t, RefusedEvent, refused.next(t))
	assert.Equal(t, RefusedEvent, refused.next(t))
	refused.none(t)
}

// TestRotation runs a replica still on the old key beside one on (new,
// old) and one on the new key alone: the middle one accepts the old
// replica's relays and records, the last refuses them.
func TestRotation(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	oldKey, newKey := redistest.ClusterKey(), bytes.Repeat([]byte("n"), 48)
	old, _ := sealedStore(t, rdb, "old", oldKey, nil)
	mid, midRefused := sealedStore(t, rdb, "mid", newKey, oldKey)
	fresh, freshRefused := sealedStore(t, rdb, "new", newKey, nil)
	ctx := t.Context()

	midGot := make(chan replication.Relay, 4)
	cancel, err := mid.Subscribe(ctx, "s1", func(r replication.Relay) { midGot <- r })
	require.NoError(t, err)
	defer cancel()
	freshGot := make(chan replication.Relay, 4)
	cancel2, err := fresh.Subscribe(ctx, "s1", func(r replication.Relay) { freshGot <- r })
	require.NoError(t, err)
	defer cancel2()

	require.NoError(t, old.Create(ctx, "s1", replication.SessionRecord{Principal: "alice"}))
	require.NoError(t, old.Publish(ctx, "s1", replication.Relay{Kind: replication.RelayClient, From: "old", Data: []byte("from old")}))
	assert.Equal(t, "from old", string((<-midGot).Data), "the rotating replica accepts the old key")
	assert.Equal(t, RefusedUnsigned, freshRefused.next(t), "the new key alone does not")
	rec, err := mid.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, "alice", rec.Principal)

	require.NoError(t, mid.Publish(ctx, "s1", replication.Relay{Kind: replication.RelayClient, From: "mid", Data: []byte("from mid")}))
	assert.Equal(t, "from mid", string((<-midGot).Data))
	assert.Equal(t, "from mid", string((<-freshGot).Data), "the rotating replica signs with the new key")
	midRefused.none(t)
	freshRefused.none(t)
	assert.Empty(t, freshGot)
}

// BenchmarkRelaySeal is what the cluster key adds to one relay: its stamp
// and seal by the sender, its opening (AES-256-GCM), replay check and
// decoding by a receiver.
func BenchmarkRelaySeal(b *testing.B) {
	keys, err := seal.New(redistest.ClusterKey(), nil)
	require.NoError(b, err)
	s := &Store{cfg: defaultConfig(), keys: keys, subs: map[string]map[*subscription]struct{}{}}
	ch := "vigil:{session-id-0123456789}:r"
	relay := encodeRelay(replication.Relay{Kind: replication.RelayClient, From: "replica-a1b2", Data: []byte(`{"jsonrpc":"2.0","id":7,"result":{"action":"accept","content":{"name":"x"}}}`)})
	refused := 0
	s.cfg.refused = func(string) { refused++ }
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n%(1<<16) == 0 { // a window's relays, as a busy replica remembers them
			s.replay = seal.NewReplay(replayWindow, replayMemory)
		}
		n++
		s.dispatch(ch, string(s.stamp(ch, relay)))
	}
	require.Zero(b, refused)
}
