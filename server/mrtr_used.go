package server

import (
	"crypto/sha256"
	"sync"
)

// maxUsedStates bounds the requestStates a server remembers as used: the
// states of the last TTL's retried rounds, a digest and an expiry each.
const maxUsedStates = 1 << 16

// usedStates remembers the requestStates presented already, until they
// expire, so that each is accepted once: a retry with a state used before
// (a replay, by its caller or by whoever saw it) is refused. A replica
// remembers its own; a state replayed to another replica sharing the key
// is refused there only once used there. The zero value is ready; it is
// safe for concurrent use.
type usedStates struct {
	mu   sync.Mutex
	seen map[[16]byte]int64 // digest of the sealed state → when it expires (Unix seconds)
	// sweepAt is when the oldest remembered state expires, once full: no
	// sweep before it frees anything.
	sweepAt int64
}

// stateDigest is what names a sealed state among those used: the first
// 16 bytes of its SHA-256, which tell nothing of the state.
func stateDigest(sealed []byte) [16]byte {
	sum := sha256.Sum256(sealed)
	return [16]byte(sum[:16])
}

// use records the state of digest key, which expires at expires (Unix
// seconds, as now). It records nothing when the state was used already
// (used), or when maxUsedStates states that have not expired are
// remembered (full): the state may be presented again once some expire.
func (u *usedStates) use(key [16]byte, expires, now int64) (used, full bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if exp, ok := u.seen[key]; ok && exp >= now {
		return true, false
	}
	if u.seen == nil {
		u.seen = map[[16]byte]int64{}
	}
	if len(u.seen) >= maxUsedStates {
		if now < u.sweepAt {
			return false, true
		}
		u.sweepAt = expires
		for k, exp := range u.seen {
			if exp < now {
				delete(u.seen, k)
			} else {
				u.sweepAt = min(u.sweepAt, exp)
			}
		}
		if len(u.seen) >= maxUsedStates {
			return false, true
		}
	}
	u.seen[key] = expires
	return false, false
}
