package server

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// state is the digest of a state numbered i.
func state(i int) [16]byte { return stateDigest([]byte{byte(i), byte(i >> 8), byte(i >> 16), 's'}) }

// usedStates accepts each state once until it expires, and holds at most
// maxUsedStates: full of unexpired states it refuses a new one without
// recording it, and makes room once they expire. Without a share (every
// request has the same caller key) the whole table is that caller's.
func TestUsedStatesBounded(t *testing.T) {
	t.Parallel()
	var u usedStates
	use, _ := u.use(state(0), "", false, 100, 10)
	assert.Equal(t, stateFirst, use)
	use, _ = u.use(state(0), "", false, 100, 50)
	assert.Equal(t, stateUsed, use, "a second use before it expires")
	for i := 1; i < maxUsedStates; i++ {
		use, _ = u.use(state(i), "", false, 100+int64(i%7), 10)
		require.Equal(t, stateFirst, use)
	}
	use, freeAt := u.use(state(maxUsedStates), "", false, 200, 20)
	assert.Equal(t, stateFull, use, "full of states that have not expired")
	assert.Equal(t, int64(101), freeAt, "the earliest expires after 100")
	use, _ = u.use(state(maxUsedStates), "", false, 200, 20)
	assert.Equal(t, stateFull, use, "a refused state was not recorded")
	assert.Len(t, u.seen, maxUsedStates)

	use, _ = u.use(state(maxUsedStates), "", false, 200, 107)
	assert.Equal(t, stateFirst, use, "once the others expired, they are forgotten")
	assert.Len(t, u.seen, 1)
	checkUsedStates(t, &u)
}

// The share rule: a holder records a state only while it holds fewer than
// the room left. Alone it fills half; another holder's first state is then
// accepted; a replay is refused as used, not as busy, over the share too;
// a refused state is not recorded; a holder's expired states free its
// share; the table fills up only with many holders.
func TestUsedStatesShare(t *testing.T) {
	t.Parallel()
	u := usedStates{max: 16}
	n := 0
	use := func(holder string, expires, now int64) stateUse {
		n++
		got, _ := u.use(state(n), holder, true, expires, now)
		return got
	}
	for range 8 {
		require.Equal(t, stateFirst, use("mallory", 100, 10))
	}
	got, freeAt := u.use(state(1000), "mallory", true, 200, 10)
	assert.Equal(t, stateShare, got, "mallory holds half: as many as the room left")
	assert.Equal(t, int64(101), freeAt)
	got, _ = u.use(state(1000), "mallory", true, 200, 10)
	assert.Equal(t, stateShare, got, "the refused state was not recorded")
	got, _ = u.use(state(1), "mallory", true, 100, 10)
	assert.Equal(t, stateUsed, got, "a replay is refused as used")

	assert.Equal(t, stateFirst, use("alice", 300, 10), "another holder's first state")
	for range 3 {
		require.Equal(t, stateFirst, use("alice", 300, 10))
	}
	assert.Equal(t, stateShare, use("alice", 300, 10), "alice holds 4, the room left")
	assert.Equal(t, stateFirst, use("bob", 300, 10))
	assert.Equal(t, stateFirst, use("bob", 300, 10))
	assert.Equal(t, stateFirst, use("carol", 300, 10))
	assert.Equal(t, stateFirst, use("dave", 300, 10))
	assert.Equal(t, stateFull, use("erin", 300, 10), "full only with five holders")
	checkUsedStates(t, &u)

	assert.Equal(t, stateFirst, use("mallory", 400, 101), "mallory's states expired: her share is free")
	assert.Len(t, u.seen, 9)
	checkUsedStates(t, &u)
}

// Against a plain model (every state kept in a list, expired ones
// filtered out, counts taken afresh), usedStates answers the same for a
// random stream of states, holders (a few heavy, many light), expiries,
// replays and times, with and without a share.
func TestUsedStatesModel(t *testing.T) {
	t.Parallel()
	for _, share := range []bool{true, false} {
		t.Run(fmt.Sprint("share=", share), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(66, 1))
			type entry struct {
				key     int
				holder  string
				expires int64
			}
			var model []entry
			u := usedStates{max: 64}
			now := int64(1000)
			outcomes := map[stateUse]int{}
			for step := range 20000 {
				now += int64(rng.IntN(8) / 7)
				key := step
				if rng.IntN(8) == 0 && len(model) > 0 {
					key = model[rng.IntN(len(model))].key // a replay
				}
				holder := fmt.Sprint("h", rng.IntN(3))
				if rng.IntN(4) == 0 {
					holder = fmt.Sprint("light", rng.IntN(50))
				}
				expires := now + int64(rng.IntN(60))
				model = slices.DeleteFunc(model, func(e entry) bool { return e.expires < now })
				want, held := stateFirst, 0
				for _, e := range model {
					if e.key == key {
						want = stateUsed
					}
					if e.holder == holder {
						held++
					}
				}
				room := 64 - len(model)
				switch {
				case want == stateUsed:
				case room <= 0:
					want = stateFull
				case share && held >= room:
					want = stateShare
				}
				got, _ := u.use(state(key), holder, share, expires, now)
				require.Equal(t, want, got, "step %d", step)
				outcomes[got]++
				if want == stateFirst {
					model = append(model, entry{key, holder, expires})
				}
			}
			t.Log(outcomes)
			for _, o := range []stateUse{stateFirst, stateUsed, stateFull, stateShare} {
				if o != stateShare || share {
					assert.Positive(t, outcomes[o], "outcome %d met", o)
				}
			}
			checkUsedStates(t, &u)
		})
	}
}

// Under concurrent use from a barrier, three holders flooding and one
// light holder whose states are each presented twice at once: each state
// is recorded once, the light holder is never refused, no flooder holds
// more than half, and the counts and heap match what is held.
func TestUsedStatesConcurrent(t *testing.T) {
	t.Parallel()
	const size, light = 4096, 32
	u := usedStates{max: size}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for f := range 3 {
		wg.Go(func() {
			<-start
			refused := 0
			for i := 0; refused < 64; i++ {
				if got, _ := u.use(state((f+1)<<20+i), fmt.Sprint("flood", f), true, 100, 10); got != stateFirst {
					if !assert.Equal(t, stateShare, got) {
						return
					}
					refused++
				}
			}
		})
	}
	var firsts [2][light]stateUse
	for twin := range 2 {
		wg.Go(func() {
			<-start
			for i := range light {
				firsts[twin][i], _ = u.use(state(i), "light", true, 100, 10)
			}
		})
	}
	close(start)
	wg.Wait()
	for i := range light {
		pair := []stateUse{firsts[0][i], firsts[1][i]}
		assert.ElementsMatch(t, []stateUse{stateFirst, stateUsed}, pair, "state %d recorded once, never refused", i)
	}
	for f := range 3 {
		assert.LessOrEqual(t, int(u.held[maphash.String(u.seed, fmt.Sprint("flood", f))]), size/2)
	}
	assert.Equal(t, int32(light), u.held[maphash.String(u.seed, "light")])
	checkUsedStates(t, &u)
}

// checkUsedStates checks that u's counts and heap match what it holds.
func checkUsedStates(t *testing.T, u *usedStates) {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	held := map[uint64]int32{}
	for _, e := range u.seen {
		held[e.holder]++
	}
	assert.Equal(t, held, u.held, "counts are those held, none at zero")
	require.Len(t, u.heap, len(u.seen))
	for i, x := range u.heap {
		assert.Equal(t, u.seen[x.key].expires, x.expires, "heap entry %d", i)
		if i > 0 {
			assert.LessOrEqual(t, u.heap[(i-1)/2].expires, x.expires, "heap order at %d", i)
		}
	}
}

// BenchmarkUsedStatesUse records states of 1,000 holders, 100 a second of
// a clock that advances with them, each kept 600 s: in steady state the
// table holds 60,000, and each use also forgets one expired.
func BenchmarkUsedStatesUse(b *testing.B) {
	var u usedStates
	holders := make([]string, 1000)
	for i := range holders {
		holders[i] = fmt.Sprint("principal-", i)
	}
	keys := make([][16]byte, 1<<20)
	for i := range keys {
		keys[i] = stateDigest([]byte(fmt.Sprint(i)))
	}
	b.ResetTimer()
	for i := range b.N {
		now := int64(i / 100)
		if got, _ := u.use(keys[i%len(keys)], holders[i%len(holders)], true, now+600, now); got != stateFirst {
			b.Fatal(got, i)
		}
	}
}
