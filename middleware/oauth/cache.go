package oauth

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
	"unsafe"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// tokenHash is the cache key of a token: its SHA-256. The cache never
// stores the token itself (a connection's memo holds its own last one:
// see ConnContext).
type tokenHash = [sha256.Size]byte

// hashToken hashes token without copying it: sha256 only reads its input.
func hashToken(token string) tokenHash {
	return sha256.Sum256(unsafe.Slice(unsafe.StringData(token), len(token)))
}

// cacheShards spreads the cache over independent locks.
const cacheShards = 16

// verdictCache is a bounded LRU cache of verdicts (a principal, or a
// refusal) keyed by token hash. Each entry is valid until its own deadline
// and only for the key-set generation it was verified under. It is safe
// for concurrent use; a nil *verdictCache caches nothing.
type verdictCache struct {
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu  sync.Mutex
	max int
	m   map[tokenHash]*list.Element
	ll  list.List // of *cacheEntry, most recently used first
}

type cacheEntry struct {
	key   tokenHash
	p     *auth.Principal // nil for a refusal
	err   *Error          // the refusal, when p is nil
	until time.Time       // the entry is used while now is before until
	gen   uint64
}

// newVerdictCache returns a cache of at most size entries; size <= 0
// returns nil (no caching).
func newVerdictCache(size int) *verdictCache {
	if size <= 0 {
		return nil
	}
	c := &verdictCache{}
	per := (size + cacheShards - 1) / cacheShards
	for i := range c.shards {
		c.shards[i].max = per
		c.shards[i].m = make(map[tokenHash]*list.Element)
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
	defer s.mu.Unlock()
	el, ok := s.m[*k]
	if !ok {
		return nil, nil, time.Time{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.until) || e.gen != gen {
		s.ll.Remove(el)
		delete(s.m, *k)
		return nil, nil, time.Time{}, false
	}
	s.ll.MoveToFront(el)
	return e.p, e.err, e.until, true
}

// put caches a verdict for k until until (nothing when until is not after
// now), evicting the least recently used entry of the shard when full.
func (c *verdictCache) put(k *tokenHash, p *auth.Principal, err *Error, now, until time.Time, gen uint64) {
	if c == nil || !until.After(now) {
		return
	}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.m[*k]; ok {
		e := el.Value.(*cacheEntry)
		e.p, e.err, e.until, e.gen = p, err, until, gen
		s.ll.MoveToFront(el)
		return
	}
	var e *cacheEntry
	if s.ll.Len() >= s.max {
		// Reuse the least recently used entry.
		el := s.ll.Back()
		e = el.Value.(*cacheEntry)
		delete(s.m, e.key)
		s.ll.Remove(el)
	} else {
		e = new(cacheEntry)
	}
	*e = cacheEntry{key: *k, p: p, err: err, until: until, gen: gen}
	s.m[*k] = s.ll.PushFront(e)
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
		n += s.ll.Len()
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
