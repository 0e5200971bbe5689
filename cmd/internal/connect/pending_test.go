package connect

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPendingBounded: 10,000 flows started by one principal leave 16
// pending (its oldest pushed out, counted expired), in bounded memory;
// another principal's flow still starts; a full table refuses a new
// principal's; every flow expires after the ttl, counted.
func TestPendingBounded(t *testing.T) {
	ended := map[string]int{}
	p := newPending(10*time.Minute, 1000, DefaultMaxPendingOfOne, func(_ *flow, why string) { ended[why]++ })
	now := time.Unix(1_700_000_000, 0)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10_000 {
		require.True(t, p.add(&flow{principal: "alice", upstream: "u"}, now))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	flows, principals := p.len()
	assert.Equal(t, DefaultMaxPendingOfOne, flows)
	assert.Equal(t, 1, principals)
	assert.Equal(t, 10_000-DefaultMaxPendingOfOne, ended["expired"])
	assert.Less(t, int64(after.HeapAlloc)-int64(before.HeapAlloc), int64(1<<20), "10,000 flows of one principal hold under 1 MiB")

	require.True(t, p.add(&flow{principal: "bob", upstream: "u"}, now), "another principal's flow starts")
	for i := range 1000 - DefaultMaxPendingOfOne - 1 {
		require.True(t, p.add(&flow{principal: fmt.Sprint("user", i), upstream: "u"}, now))
	}
	assert.False(t, p.add(&flow{principal: "carol", upstream: "u"}, now), "the table is full")
	assert.True(t, p.add(&flow{principal: "alice", upstream: "u"}, now), "alice's newest pushes her oldest out")

	p.add(&flow{principal: "dave", upstream: "u"}, now.Add(10*time.Minute)) // all others expired by now
	flows, principals = p.len()
	assert.Equal(t, 1, flows)
	assert.Equal(t, 1, principals)
	assert.Equal(t, 10_000-DefaultMaxPendingOfOne+1+1000, ended["expired"])
}

// TestPendingLink: a link opened again and again holds at most
// maxSignIns sign-ins; a state is taken once; the link is bound to the
// browser that signed in as its principal, and gone after its end.
func TestPendingLink(t *testing.T) {
	p := newPending(10*time.Minute, 10, 4, nil)
	now := time.Unix(1_700_000_000, 0)
	f := &flow{principal: "alice", upstream: "u"}
	require.True(t, p.add(f, now))
	assert.GreaterOrEqual(t, len(f.id), 26, "128 bits and more")
	var first, last *attempt
	for i := range 100 {
		last = p.signIn(f.id, now)
		require.NotNil(t, last)
		if i == 0 {
			first = last
		}
	}
	assert.Len(t, p.byState, maxSignIns)
	assert.Nil(t, p.take(first.state, now), "pushed out")
	require.Same(t, last, p.take(last.state, now))
	assert.Nil(t, p.take(last.state, now), "taken once")

	next := p.authorize(last)
	require.NotNil(t, next)
	assert.True(t, next.upstream)
	assert.Equal(t, last.cookie, next.cookie, "the same browser")
	assert.Nil(t, p.signIn(f.id, now), "bound to that browser")
	assert.Nil(t, p.signIn("unknown", now))
	p.end(f, "completed")
	assert.Nil(t, p.take(next.state, now))
	assert.Empty(t, p.byState)
	assert.Nil(t, p.signIn(f.id, now), "done")

	g := &flow{principal: "alice", upstream: "u"}
	require.True(t, p.add(g, now))
	assert.Nil(t, p.signIn(g.id, now.Add(10*time.Minute)), "expired")
}
