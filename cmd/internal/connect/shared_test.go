package connect

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/redisshare"
)

// TestSharedFlows: two replicas' flow tables on one Redis. A flow made on
// A opens on B; its sign-in's state is taken on A, once; the browser is
// bound on B and its upstream state taken on A, which gets A's own flow
// (its session and waiting call); the flow ends once, counted once, over
// the replicas; a flow of an upstream B does not serve is refused on B;
// an expired flow is counted expired by the replica whose next link
// removes it, once.
func TestSharedFlows(t *testing.T) {
	rs := redistest.Start(t)
	ended := map[string]int{}
	table := func(upstreams ...string) *sharedFlows {
		s, err := redisshare.Open(t.Context(), redisshare.Config{URL: rs.URL(), ClusterKey: redistest.ClusterKey()})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		known := map[string]bool{}
		for _, u := range upstreams {
			known[u] = true
		}
		return &sharedFlows{
			store: s.FlowStore(), local: newPending(DefaultTTL, 100, 4, nil), ttl: DefaultTTL, most: 100, mostOf: 4,
			known: func(u string) bool { return known[u] }, ended: func(f *flow, why string) { ended[f.upstream+" "+why]++ },
			log: slog.New(slog.DiscardHandler),
		}
	}
	a, b := table("u", "v"), table("u")
	ctx := t.Context()
	now := time.Now()

	f := &flow{principal: "alice", issuer: "https://idp", sub: "alice", upstream: "u"}
	ok, err := a.add(ctx, f, now)
	require.NoError(t, err)
	require.True(t, ok)
	signIn, err := b.signIn(ctx, f.id, now)
	require.NoError(t, err)
	require.NotNil(t, signIn, "made on A, opened on B")
	assert.Equal(t, "alice", signIn.f.sub)

	took, err := a.take(ctx, signIn.state, now)
	require.NoError(t, err)
	require.NotNil(t, took)
	assert.Same(t, f, took.f, "A's own flow")
	assert.Equal(t, signIn.verifier, took.verifier)
	assert.Equal(t, signIn.nonce, took.nonce)
	again, err := b.take(ctx, signIn.state, now)
	require.NoError(t, err)
	assert.Nil(t, again, "a state is taken once")

	up, err := b.authorize(ctx, took, now)
	require.NoError(t, err)
	require.NotNil(t, up)
	assert.True(t, up.upstream)
	assert.Equal(t, signIn.cookie, up.cookie, "bound to the browser that signed in")
	other, err := a.signIn(ctx, f.id, now)
	require.NoError(t, err)
	assert.Nil(t, other, "bound: the link opens no more")

	took, err = a.take(ctx, up.state, now)
	require.NoError(t, err)
	require.NotNil(t, took)
	b.end(ctx, took.f, "completed")
	a.end(ctx, f, "completed")
	assert.Equal(t, map[string]int{"u completed": 1}, ended, "ended once over the replicas")
	select {
	case <-f.done:
	default:
		t.Fatal("A's flow is done: its waiting call wakes")
	}

	h := &flow{principal: "bob", issuer: "https://idp", sub: "bob", upstream: "v"}
	ok, err = a.add(ctx, h, now)
	require.NoError(t, err)
	require.True(t, ok)
	refused, err := b.signIn(ctx, h.id, now)
	require.NoError(t, err)
	assert.Nil(t, refused, "B serves no upstream v")
	a.end(ctx, h, "refused")
	assert.Equal(t, 1, ended["v refused"])

	g := &flow{principal: "bob", issuer: "https://idp", sub: "bob", upstream: "u"}
	ok, err = a.add(ctx, g, now)
	require.NoError(t, err)
	require.True(t, ok)
	later := now.Add(DefaultTTL + time.Second)
	ok, err = b.add(ctx, &flow{principal: "carol", upstream: "u"}, later)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 1, ended["u expired"], "bob's flow expired, counted by the replica whose link removed it")
	ok, err = a.add(ctx, &flow{principal: "dave", upstream: "u"}, later)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 1, ended["u expired"], "once")
}
