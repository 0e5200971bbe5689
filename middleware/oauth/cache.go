package oauth

import (
	"crypto/sha256"
	"hash/maphash"
	"sync"
	"time"
	"unsafe"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// tokenHash is the cache key of a token: its SHA-256. The cache never
// stores the token itself (a connection's memo holds its own last one:
// see conn_memo.go).
type tokenHash = [sha256.Size]byte

// hashToken hashes token without copying it: sha256 only reads its input.
func hashToken(token string) tokenHash {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token)))
}

// cacheShards spreads the cache over independent locks.
const cacheShards = 16

// verdictCache is a bounded LRU cache of verdicts (a principal, or a
// refusal) keyed by token hash. Each entry is valid until its own deadline
// and only for the key-set generation it was verified under. A principal
// holds at most an eighth of each shard (cacheShare): one with many tokens
// pushes out its own, not everyone's. It is safe for concurrent use; a nil
// *verdictCache caches nothing.
type verdictCache struct {
	shards [cacheShards]cacheShard
	seed   maphash.Seed // of the holders, principals' keys hashed
}

type cacheShard struct {
	mu sync.Mutex
	lru[verdict]
}

// verdict is what a token was found to be: a principal, or a refusal.
type verdict struct {
	p   *auth.Principal // nil for a refusal
	err *Error          // the refusal, when p is nil
}

// newVerdictCache returns a cache of at most size entries; size <= 0
// returns nil (no caching).
func newVerdictCache(size int) *verdictCache {
	if size <= 0 {
		return nil
	}
	c := &verdictCache{seed: maphash.MakeSeed()}
	per := (size + cacheShards - 1) / cacheShards
	for i := range c.shards {
		c.shards[i].init(per, shareOf(per))
	}
	return c
}

func (c *verdictCache) shard(k *tokenHash) *cacheShard { return &c.shards[k[0]%cacheShards] }

// get returns the verdict cached for k, and until when it holds, if it
// is still valid at now under key-set generation gen; an entry that is not
// is dropped.
func (c *verdictCache) get(k *tokenHash, now time.Time, gen uint64) (*auth.Principal, *Error, time.Time, bool) {
	if c == nil {
		return nil, nil, time.Time{}, false
	}
	s := c.shard(k)
	s.mu.Lock()
	v, until, ok := s.get(k, now, gen)
	s.mu.Unlock()
	return v.p, v.err, until, ok
}

// put caches a verdict for k until until (nothing when until is not after
// now), evicting the least recently used entry of p's in the shard when p
// holds its share of it, else the shard's least recently used entry when
// full.
func (c *verdictCache) put(k *tokenHash, p *auth.Principal, err *Error, now, until time.Time, gen uint64) {
	if c == nil || !until.After(now) {
		return
	}
	h := holderOf(c.seed, p)
	s := c.shard(k)
	s.mu.Lock()
	s.put(k, verdict{p, err}, until, gen, h)
	s.mu.Unlock()
}

// len returns the number of entries, expired ones included.
func (c *verdictCache) len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += s.len()
		s.mu.Unlock()
	}
	return n
}

// minTime returns the earlier of a and b, ignoring a zero a.
func minTime(a, b time.Time) time.Time {
	if !a.IsZero() && a.Before(b) {
		return a
	}
	return b
}
