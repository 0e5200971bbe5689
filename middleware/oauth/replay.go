package oauth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// replaySweepEvery is how often, at most, a full replayCache looks at
// every entry for expired ones to make room: a flood of new proofs into a
// full cache costs one pass a second, not one per proof.
const replaySweepEvery = time.Second

// replayProbes is how many entries each new proof looks at, from a random
// place in the map, to forget those whose window ended: while more than
// 1/replayProbes of the entries are expired, each insertion removes more
// than it adds, so the cache holds the proofs of the last window plus at
// most that share besides, without a pass over the whole map under the
// lock (which at a million entries holds every DPoP request for
// milliseconds).
const replayProbes = 4

// replayKey is the first half of a proof's digest: 128 bits, which no
// client can make collide with another proof's by chance, in half the
// memory of the whole digest.
type replayKey [sha256.Size / 2]byte

// replayCache remembers the DPoP proofs accepted in this process, each
// until its window ends, at most max of them. It is safe for concurrent
// use.
type replayCache struct {
	mu    sync.Mutex
	max   int
	m     map[replayKey]int64 // digest → until, in Unix nanoseconds
	swept time.Time           // the last sweep of a full cache
}

func newReplayCache(size int) *replayCache {
	return &replayCache{max: size, m: make(map[replayKey]int64)}
}

// use records the proof of digest d until until and reports whether it
// was not already recorded, at now; full says the cache has no room for
// it (it is not recorded, and must not be accepted).
func (c *replayCache) use(d [sha256.Size]byte, now, until time.Time) (first, full bool) {
	k := replayKey(d[:len(replayKey{})])
	at := now.UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	if exp, ok := c.m[k]; ok && at < exp {
		return false, false
	}
	probed := 0
	for key, exp := range c.m { // Go starts each range at a random entry
		if exp <= at {
			delete(c.m, key)
		}
		if probed++; probed == replayProbes {
			break
		}
	}
	if len(c.m) >= c.max {
		if now.Sub(c.swept) >= replaySweepEvery {
			c.swept = now
			for key, exp := range c.m {
				if exp <= at {
					delete(c.m, key)
				}
			}
		}
		if len(c.m) >= c.max {
			return false, true
		}
	}
	c.m[k] = until.UnixNano()
	return true, false
}
