package oauth

import (
	"sync"
	"time"
)

// exchangeCache is a bounded LRU cache of exchanged tokens, keyed by
// exchangeKey. An entry is used while now is before its own deadline. It
// is safe for concurrent use.
type exchangeCache struct {
	mu sync.Mutex
	lru[string]
}

// newExchangeCache returns a cache of at most size entries.
func newExchangeCache(size int) *exchangeCache {
	c := &exchangeCache{}
	c.init(size)
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

// put caches token under k until until, unless that is not after now,
// dropping the least recently used entry when full.
func (c *exchangeCache) put(k tokenHash, token string, until, now time.Time) {
	if !until.After(now) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.put(&k, token, until, 0)
}

// len returns the number of entries, for tests.
func (c *exchangeCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.len()
}
