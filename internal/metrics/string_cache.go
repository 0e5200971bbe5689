package metrics

import (
	"maps"
	"sync"
	"sync/atomic"
)

// stringCache maps strings (label values) to what they resolve to, for
// lookups on every request: a reader loads one pointer and indexes a
// plain map, with no lock, no atomic read-modify-write and no hashing of
// an interface, as a sync.Map's Load does; the map is copied on each
// store, which happens once per label value, and label values are
// bounded. Its zero value is empty and ready for use; it is safe for
// concurrent use.
type stringCache[V any] struct {
	mu sync.Mutex // serializes stores
	m  atomic.Pointer[map[string]V]
}

// load returns the value stored for k, if any.
func (c *stringCache[V]) load(k string) (v V, ok bool) {
	if m := c.m.Load(); m != nil {
		v, ok = (*m)[k]
	}
	return v, ok
}

// loadOrStore returns the value stored for k if there is one (loaded
// true), and otherwise stores v for k and returns it.
func (c *stringCache[V]) loadOrStore(k string, v V) (actual V, loaded bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var old map[string]V
	if m := c.m.Load(); m != nil {
		if got, ok := (*m)[k]; ok {
			return got, true
		}
		old = *m
	}
	m := make(map[string]V, len(old)+1)
	maps.Copy(m, old)
	m[k] = v
	c.m.Store(&m)
	return v, false
}
