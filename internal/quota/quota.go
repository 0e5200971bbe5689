// Package quota counts what each caller holds at once (requests in
// flight, tool slots) against a limit per caller, without a lock on the
// way: taking and giving back a unit is one map lookup and an atomic.
package quota

import (
	"sync"
	"sync/atomic"
)

// Counter counts the units each key holds, refusing a key at its limit.
// Its map holds only keys that hold something: an entry is deleted when
// its count returns to zero, so that memory is bounded by the units held,
// whatever keys callers send. A nil *Counter admits everything. It is safe
// for concurrent use.
type Counter struct {
	limit int64
	m     sync.Map // string -> *entry
}

// entry is one key's count; -1 marks an entry deleted from the map, which
// an Acquire that still found it must not use.
type entry struct{ n atomic.Int64 }

// New returns a Counter that lets each key hold at most limit units; nil
// (no limit) when limit <= 0.
func New(limit int) *Counter {
	if limit <= 0 {
		return nil
	}
	return &Counter{limit: int64(limit)}
}

// Limit returns the most units a key may hold; 0 for no limit.
func (c *Counter) Limit() int {
	if c == nil {
		return 0
	}
	return int(c.limit)
}

// Hold is one unit taken by Acquire; Release gives it back. The zero Hold
// (no limit) releases nothing.
type Hold struct {
	c   *Counter
	key string
	e   *entry
}

// Acquire takes a unit for key; false when key holds its limit already.
func (c *Counter) Acquire(key string) (Hold, bool) {
	if c == nil {
		return Hold{}, true
	}
	for {
		v, ok := c.m.Load(key)
		if !ok {
			v, _ = c.m.LoadOrStore(key, new(entry))
		}
		e := v.(*entry)
		for {
			n := e.n.Load()
			if n < 0 {
				break // deleted meanwhile: look again
			}
			if n >= c.limit {
				return Hold{}, false
			}
			if e.n.CompareAndSwap(n, n+1) {
				return Hold{c: c, key: key, e: e}, true
			}
		}
		c.m.CompareAndDelete(key, e)
	}
}

// Release gives back the unit h holds; call it once.
func (h Hold) Release() {
	if h.e == nil {
		return
	}
	if h.e.n.Add(-1) == 0 && h.e.n.CompareAndSwap(0, -1) {
		h.c.m.CompareAndDelete(h.key, h.e)
	}
}

// Held returns the units key holds.
func (c *Counter) Held(key string) int {
	if c == nil {
		return 0
	}
	if v, ok := c.m.Load(key); ok {
		return int(max(v.(*entry).n.Load(), 0))
	}
	return 0
}

// Keys returns how many keys hold something (or are about to).
func (c *Counter) Keys() int {
	if c == nil {
		return 0
	}
	n := 0
	c.m.Range(func(any, any) bool { n++; return true })
	return n
}
