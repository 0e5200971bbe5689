package oauth

import (
	"container/list"
	"sync"
	"time"
)

// exchangeCache is a bounded LRU cache of exchanged tokens, keyed by
// exchangeKey. An entry is used while now is before its own deadline. It
// is safe for concurrent use.
type exchangeCache struct {
	mu  sync.Mutex
	max int
	m   map[tokenHash]*list.Element
	ll  list.List // of *exchangeEntry, most recently used first
}

type exchangeEntry struct {
	key   tokenHash
	token string
	until time.Time
}

// newExchangeCache returns a cache of at most size entries.
func newExchangeCache(size int) *exchangeCache {
	return &exchangeCache{max: size, m: make(map[tokenHash]*list.Element)}
}

// get returns the token cached under k, if it is still good at now; an
// expired one is dropped.
func (c *exchangeCache) get(k tokenHash, now time.Time) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[k]
	if !ok {
		return "", false
	}
	e := el.Value.(*exchangeEntry)
	if !now.Before(e.until) {
		c.ll.Remove(el)
		delete(c.m, k)
		return "", false
	}
	c.ll.MoveToFront(el)
	return e.token, true
}

// put caches token under k until until, unless that is not after now,
// dropping the least recently used entry when full.
func (c *exchangeCache) put(k tokenHash, token string, until, now time.Time) {
	if !until.After(now) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[k]; ok {
		el.Value = &exchangeEntry{key: k, token: token, until: until}
		c.ll.MoveToFront(el)
		return
	}
	if c.ll.Len() >= c.max {
		oldest := c.ll.Back()
		c.ll.Remove(oldest)
		delete(c.m, oldest.Value.(*exchangeEntry).key)
	}
	c.m[k] = c.ll.PushFront(&exchangeEntry{key: k, token: token, until: until})
}

// len returns the number of entries, for tests.
func (c *exchangeCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
