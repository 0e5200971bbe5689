package oauth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// replaySweepEvery is how often, at most, a full replayCache looks for
// expired entries to make room: a flood of new proofs into a full cache
// costs one pass a second, not one per proof.
const replaySweepEvery = time.Second

// replayCache remembers the DPoP proofs accepted in this process, each
// until its window ends, at most max of them. It is safe for concurrent
// use.
type replayCache struct {
	mu    sync.Mutex
	max   int
	m     map[[sha256.Size]byte]time.Time // digest → until
	swept time.Time                       // the last sweep of a full cache
}

func newReplayCache(size int) *replayCache {
	return &replayCache{max: size, m: make(map[[sha256.Size]byte]time.Time)}
}

// use records k until until and reports whether it was not already
// recorded, at now; full says the cache has no room for k (it is not
// recorded, and must not be accepted).
func (c *replayCache) use(k [sha256.Size]byte, now, until time.Time) (first, full bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if exp, ok := c.m[k]; ok && now.Before(exp) {
		return false, false
	}
	if len(c.m) >= c.max {
		if now.Sub(c.swept) >= replaySweepEvery {
			c.swept = now
			for key, exp := range c.m {
				if !now.Before(exp) {
					delete(c.m, key)
				}
			}
		}
		if len(c.m) >= c.max {
			return false, true
		}
	}
	c.m[k] = until
	return true, false
}
