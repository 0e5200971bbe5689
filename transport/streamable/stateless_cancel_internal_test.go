package streamable

import (
	"hash/maphash"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
)

// The registry finds a caller's request by id; two in flight under one
// key are ambiguous (a caller behind one address, or a client reusing
// ids), and neither is found until one ends.
func TestStatelessCallsAmbiguous(t *testing.T) {
	var id transport.ID
	require.NoError(t, id.UnmarshalJSON([]byte(`7`)))
	req := &transport.Request{ID: id}
	calls := newStatelessCalls()
	a, b, other := &oneShot{req: req, caller: "alice"}, &oneShot{req: req, caller: "alice"}, &oneShot{req: req, caller: "bob"}
	calls.add(a)
	calls.add(other)
	assert.Same(t, a, calls.find(callKey{"alice", id}))
	assert.Same(t, other, calls.find(callKey{"bob", id}))
	calls.add(b)
	assert.Nil(t, calls.find(callKey{"alice", id}), "ambiguous")
	calls.remove(a)
	assert.Same(t, b, calls.find(callKey{"alice", id}))
	calls.remove(b)
	calls.remove(other)
	assert.Nil(t, calls.find(callKey{"alice", id}))
	for i := range calls.shards {
		for _, head := range calls.shards[i].buckets {
			assert.Nil(t, head, "nothing left behind")
		}
	}
}

// Many requests in flight share the registry's chains: each is found by
// its own key, whichever of its chain's neighbors ended first.
func TestStatelessCallsChains(t *testing.T) {
	calls := newStatelessCalls()
	const n = 4 * callShards * callBuckets // a few in every chain
	conns := make([]*oneShot, n)
	for i := range conns {
		caller := "alice"
		if i%2 == 1 {
			caller = "bob"
		}
		id := transport.Int64ID(int64(i / 2))
		if i%3 == 0 {
			id = transport.StringID(id.String())
		}
		conns[i] = &oneShot{req: &transport.Request{ID: id}, caller: caller}
		calls.add(conns[i])
	}
	for i, conn := range conns {
		require.Same(t, conn, calls.find(callKey{conn.caller, conn.req.ID}), "%d", i)
	}
	for i := 0; i < n; i += 2 {
		calls.remove(conns[i])
	}
	for i, conn := range conns {
		if i%2 == 0 {
			assert.Nil(t, calls.find(callKey{conn.caller, conn.req.ID}), "%d ended", i)
		} else {
			assert.Same(t, conn, calls.find(callKey{conn.caller, conn.req.ID}), "%d", i)
		}
	}
	for i := n - 1; i > 0; i -= 2 {
		calls.remove(conns[i])
	}
	for i := range calls.shards {
		for _, head := range calls.shards[i].buckets {
			assert.Nil(t, head, "nothing left behind")
		}
	}
}

// A RelayCancel's data is the caller and the notification; any other
// bytes are refused, never a panic.
func TestParseCancel(t *testing.T) {
	data := appendCancel(nil, "alice", []byte(`{"x":1}`))
	caller, n, ok := parseCancel(data)
	require.True(t, ok)
	assert.Equal(t, "alice", caller)
	assert.Equal(t, `{"x":1}`, string(n))
	for _, bad := range [][]byte{nil, {0, 0, 0}, {0, 0, 0, 9, 'a'}, {0xff, 0xff, 0xff, 0xff}} {
		_, _, ok := parseCancel(bad)
		assert.False(t, ok, "%v", bad)
	}
}

// The cancels relayed to other replicas are bounded for each caller and
// in all: a caller that floods has its burst, then its rate, whatever the
// flood; another caller keeps its own burst meanwhile; and many callers
// together have the Endpoint's.
func TestCancelRelayBudget(t *testing.T) {
	b := newCancelRelayBudget()
	at := time.Unix(1_000_000, 0)
	allowed := func(caller string, n int, now time.Time) int {
		ok := 0
		for range n {
			if b.allow(caller, now) {
				ok++
			}
		}
		return ok
	}
	bucket := func(caller string) uint64 { return maphash.String(b.seed, caller) % cancelRelayBuckets }
	assert.Equal(t, cancelRelayCallerBurst, allowed("mallory", 80_000, at), "the burst, of 80,000")
	assert.Equal(t, cancelRelayPerCaller, allowed("mallory", 80_000, at.Add(time.Second)), "a second later, the rate")
	other := "alice"
	for i := 0; bucket(other) == bucket("mallory"); i++ {
		other = "alice" + strconv.Itoa(i) // a caller in a bucket of its own
	}
	assert.Equal(t, cancelRelayCallerBurst, allowed(other, 100, at.Add(time.Second)), "another caller's own burst")

	b = newCancelRelayBudget()
	total := 0
	for i := range 10 * cancelRelayBuckets {
		total += allowed("caller"+strconv.Itoa(i), 1_000, at)
	}
	assert.Equal(t, cancelRelayBurst, total, "the Endpoint's burst, over every caller")
}
