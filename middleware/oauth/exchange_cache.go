package oauth

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// exchangeCache is a bounded LRU cache of exchanged tokens, keyed by
// exchangeKey. An entry is used while now is before its own deadline. A
// principal holds at most an eighth of it (cacheShare): one exchanging
// for many tokens, audiences or scopes pushes out its own tokens, not
// everyone's. It is safe for concurrent use.
type exchangeCache struct {
	mu   sync.Mutex
	seed maphash.Seed // of the holders, principals' keys hashed
	lru[string]
}

// newExchangeCache returns a cache of at most size entries.
func newExchangeCache(size int) *exchangeCache {
	c := &exchangeCache{seed: maphash.MakeSeed()}
	c.init(size, shareOf(size))
	return c
}

// get returns the token cached under k, if it is still good at now; an
// expired one is dropped.
func (c *exchangeCache) get(k tokenHash, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tok, _, ok := c.lru.get(&k, now, 0)
	return tok, ok
}

// put caches token, exchanged for p, under k until until, unless that is
// not after now, dropping p's least recently used entry when p holds its
// share, else the least recently used entry when full.
func (c *exchangeCache) put(k tokenHash, p *auth.Principal, token string, until, now time.Time) {
	if !until.After(now) {
		return
	}
	h := holderOf(c.seed, p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.put(&k, token, until, 0, h)
}

// len returns the number of entries, for tests.
func (c *exchangeCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.len()
}
