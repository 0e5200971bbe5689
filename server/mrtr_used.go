package server

import (
	"crypto/sha256"
	"hash/maphash"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// maxUsedStates bounds the requestStates a server remembers as used: the
// states of the last TTL's retried rounds, a digest, an expiry and a
// holder each.
const maxUsedStates = 1 << 16

// stateUse is what usedStates answers of a state presented.
type stateUse int

const (
	stateFirst stateUse = iota // recorded: its first use
	stateUsed                  // recorded before, and not expired
	stateShare                 // its holder holds its share: not recorded
	stateFull                  // no room at all: not recorded
)

// usedStates remembers the requestStates presented already, until they
// expire, so that each is accepted once: a retry with a state used before
// (a replay, by its caller or by whoever saw it) is refused. A replica
// remembers its own; a state replayed to another replica sharing the key
// is refused there only once used there. The zero value is ready; it is
// safe for concurrent use.
//
// The share rule (as the DPoP replay cache's): a state is recorded only
// while its holder, the caller it is sealed to, holds fewer states than
// the table has room left. One holder alone fills at most half of it, n
// holders leave at least (size+1)/2^n - 1 free, and a holder holding fewer
// than the room left is never refused: when room runs short, only the
// heaviest are. Counts exist only for holders holding states, under a
// hash seeded per table, so what clients name is never an unbounded key.
type usedStates struct {
	mu   sync.Mutex
	max  int                    // 0: maxUsedStates
	seen map[[16]byte]usedState // by digest of the sealed state
	held map[uint64]int32       // states held, by holder; never an entry at zero
	heap []usedExpiry           // seen's states, a min-heap by expiry
	seed maphash.Seed           // hashes holders; made with seen
}

// usedState is a state remembered: until when, and by whom it is held.
type usedState struct {
	expires int64 // Unix seconds: remembered while now is not after it
	holder  uint64
}

// usedExpiry is a state of the heap: when it expires, and its digest.
type usedExpiry struct {
	expires int64
	key     [16]byte
}

// stateDigest is what names a sealed state among those used: the first
// 16 bytes of its SHA-256, which tell nothing of the state.
func stateDigest(sealed []byte) [16]byte {
	sum := sha256.Sum256(sealed)
	return [16]byte(sum[:16])
}

// use records the state of digest key, sealed to holder (a caller key),
// which expires at expires (Unix seconds, as now): stateFirst when
// recorded, stateUsed when it was recorded before and has not expired,
// stateShare when share is set and holder holds as many states as the
// table has room left, stateFull when it has none. Without share (every
// request has the same caller key: no one else to keep room for) the
// whole table is the holder's. A state refused is not recorded; freeAt is
// then the second the earliest state remembered is forgotten, the earliest
// a retry may succeed. Each call forgets the states expired, each once, by
// the heap: no pass over the table.
func (u *usedStates) use(key [16]byte, holder string, share bool, expires, now int64) (_ stateUse, freeAt int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.seen == nil {
		u.seen, u.held, u.seed = map[[16]byte]usedState{}, map[uint64]int32{}, maphash.MakeSeed()
	}
	for len(u.heap) > 0 && u.heap[0].expires < now {
		u.forget(u.pop())
	}
	if _, ok := u.seen[key]; ok {
		return stateUsed, 0
	}
	h := maphash.String(u.seed, holder)
	room := u.size() - len(u.seen)
	switch {
	case room <= 0:
		return stateFull, u.heap[0].expires + 1
	case share && int(u.held[h]) >= room:
		return stateShare, u.heap[0].expires + 1
	}
	u.seen[key] = usedState{expires: expires, holder: h}
	u.held[h]++
	u.push(usedExpiry{expires: expires, key: key})
	return stateFirst, 0
}

// size is the most states the table holds.
func (u *usedStates) size() int {
	if u.max > 0 {
		return u.max
	}
	return maxUsedStates
}

// forget drops the state of key, and its count from its holder's.
func (u *usedStates) forget(key [16]byte) {
	h := u.seen[key].holder
	delete(u.seen, key)
	if n := u.held[h] - 1; n > 0 {
		u.held[h] = n
	} else {
		delete(u.held, h)
	}
}

// push adds x to the heap.
func (u *usedStates) push(x usedExpiry) {
	u.heap = append(u.heap, x)
	for i := len(u.heap) - 1; i > 0; {
		p := (i - 1) / 2
		if u.heap[p].expires <= u.heap[i].expires {
			break
		}
		u.heap[p], u.heap[i] = u.heap[i], u.heap[p]
		i = p
	}
}

// pop removes the heap's earliest state and returns its digest.
func (u *usedStates) pop() [16]byte {
	h := u.heap
	top, n := h[0].key, len(h)-1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1].expires < h[c].expires {
			c++
		}
		if h[i].expires <= h[c].expires {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	u.heap = h
	return top
}

// stateShareRefusal is the answer to a retry whose caller holds its share
// of the states remembered as used: a quota refusal (data.quota "other";
// HTTP 429 with Retry-After for a stateless request), with a message
// saying so, a retry possible after retry.
func stateShareRefusal(retry time.Duration) *Error {
	e := QuotaRefusal(protocol.QuotaOther, retry)
	e.Message = "this caller holds its share of the requestStates remembered as used: retry once some expire"
	return e
}
