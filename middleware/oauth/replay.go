package oauth

import (
	"crypto/sha256"
	"hash/maphash"
	"math"
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

// replayHolder names who holds a proof in a replayCache: its principal,
// or its key, by 32 bits of a hash under a seed of the cache's own. A
// client cannot choose a key whose holder collides with another's; two
// that collide by chance share a count.
type replayHolder uint32

// replaySecond is a time in Unix seconds, modulo 2^32: only differences
// of less than 68 years are compared (serial number arithmetic, RFC 1982),
// so that an entry takes 12 bytes besides its key, not 24.
type replaySecond uint32

// before reports whether s is before t.
func (s replaySecond) before(t replaySecond) bool { return int32(t-s) > 0 }

// replayEntry is a proof remembered: until when, and by whom it is held.
type replayEntry struct {
	until     replaySecond // the proof is refused as used while now is before it
	principal replayHolder
	key       replayHolder
}

// replayOutcome is what a replayCache answers of a new proof.
type replayOutcome int

const (
	replayFirst replayOutcome = iota // recorded: its first use
	replayUsed                       // recorded before, within its window
	replayShare                      // its principal or key holds its share: not recorded
	replayFull                       // no room at all: not recorded
)

// replayCache remembers the DPoP proofs accepted in this process, each
// until its window ends, at most max of them; a principal, and a key, may
// hold no more of them than the room left for everyone else. It is safe
// for concurrent use.
//
// The share rule: a proof is recorded only while its principal and its
// key each hold fewer proofs than the cache has room left. One holder
// alone therefore fills at most half of it, n flooding at once at most
// n/(n+1) (one after another, each half of what is left), and a holder that holds fewer than the room left is never refused: when
// room runs short, only the heaviest holders are. The counts exist only
// for holders with proofs held, at most two per proof, so what clients
// name is never an unbounded key.
type replayCache struct {
	mu    sync.Mutex
	max   int
	m     map[replayKey]replayEntry
	held  map[replayHolder]int32 // proofs held, by holder; never an entry at zero
	swept time.Time              // the last sweep of a full cache
	// seedP and seedK hash principals and keys to holders, apart.
	seedP, seedK maphash.Seed
}

// newReplayCache returns a cache of at most size proofs (at most 2^31-1).
func newReplayCache(size int) *replayCache {
	return &replayCache{
		max: min(size, math.MaxInt32), m: make(map[replayKey]replayEntry), held: make(map[replayHolder]int32),
		seedP: maphash.MakeSeed(), seedK: maphash.MakeSeed(),
	}
}

// use records the proof of digest d, held by principal (its Key) and
// key (its thumbprint), until until, at now: replayFirst when recorded,
// replayUsed when it was recorded before and its window has not ended,
// replayShare when principal or key already holds as many proofs as the
// cache has room left, replayFull when it has none. Only a proof recorded
// may be accepted.
func (c *replayCache) use(d [sha256.Size]byte, principal, key string, now, until time.Time) replayOutcome {
	k := replayKey(d[:len(replayKey{})])
	// Rounded outwards: a proof is remembered at least until until.
	e := replayEntry{
		until:     replaySecond(until.Add(time.Second - 1).Unix()),
		principal: c.holderP(principal),
		key:       c.holderK(key),
	}
	at := replaySecond(now.Unix())
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok {
		if at.before(old.until) {
			return replayUsed
		}
		c.forget(k, old)
	}
	probed := 0
	for key, old := range c.m { // Go starts each range at a random entry
		if !at.before(old.until) {
			c.forget(key, old)
		}
		if probed++; probed == replayProbes {
			break
		}
	}
	if len(c.m) >= c.max && now.Sub(c.swept) >= replaySweepEvery {
		c.swept = now
		for key, old := range c.m {
			if !at.before(old.until) {
				c.forget(key, old)
			}
		}
	}
	room := int32(c.max - len(c.m))
	switch {
	case room <= 0:
		return replayFull
	case c.held[e.principal] >= room, c.held[e.key] >= room:
		return replayShare
	}
	c.m[k] = e
	c.held[e.principal]++
	c.held[e.key]++
	return replayFirst
}

// holderP returns the holder of a principal's Key, holderK of a key's
// thumbprint.
func (c *replayCache) holderP(principal string) replayHolder {
	return replayHolder(maphash.String(c.seedP, principal))
}

func (c *replayCache) holderK(key string) replayHolder {
	return replayHolder(maphash.String(c.seedK, key))
}

// forget drops the proof of k, e, and its count from its holders'.
func (c *replayCache) forget(k replayKey, e replayEntry) {
	delete(c.m, k)
	for _, h := range [2]replayHolder{e.principal, e.key} {
		if n := c.held[h] - 1; n > 0 {
			c.held[h] = n
		} else {
			delete(c.held, h)
		}
	}
}
