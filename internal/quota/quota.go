// Package quota counts what each caller holds at once (requests in
// flight, tool slots) against a limit per caller, without a lock on the
// way: taking and giving back a unit is one map lookup and two atomics.
package quota

import (
	"sync"
	"sync/atomic"
)

// Counter counts the units each key holds, refusing a key at its limit.
// A key's entry stays when its count returns to zero, so that a caller
// coming back takes no allocation; a new key sweeps the idle entries out
// once max(sweepMin, the entries the last sweep kept) keys were added
// since, so that memory stays bounded by the keys that hold something,
// whatever keys callers send, at an amortized constant cost per new key. A nil *Counter admits
// everything. It is safe for concurrent use.
type Counter struct {
	limit   int64
	m       sync.Map     // string -> *entry
	size    atomic.Int64 // entries in m
	sweepAt atomic.Int64 // size that makes the next new key sweep
	sweep   sync.Mutex   // one sweep at a time
}

// sweepMin is the fewest keys added between two sweeps.
const sweepMin = 1024

// entry is one key's count; -1 marks an entry swept out of the map, which
// an Acquire that still found it must not use.
type entry struct{ n atomic.Int64 }

// New returns a Counter that lets each key hold at most limit units; nil
// (no limit) when limit <= 0.
func New(limit int) *Counter {
	if limit <= 0 {
		return nil
	}
	c := &Counter{limit: int64(limit)}
	c.sweepAt.Store(sweepMin)
	return c
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
type Hold struct{ e *entry }

// Acquire takes a unit for key; false when key holds its limit already.
func (c *Counter) Acquire(key string) (Hold, bool) {
	if c == nil {
		return Hold{}, true
	}
	for {
		v, ok := c.m.Load(key)
		if !ok {
			var loaded bool
			if v, loaded = c.m.LoadOrStore(key, new(entry)); !loaded && c.size.Add(1) > c.sweepAt.Load() {
				c.sweepIdle()
			}
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
				return Hold{e: e}, true
			}
		}
		c.m.CompareAndDelete(key, e) // the sweep's, which counted it out
	}
}

// sweepIdle deletes the entries that hold nothing. New keys that arrive
// meanwhile wait for it, so that they cannot outgrow it.
func (c *Counter) sweepIdle() {
	c.sweep.Lock()
	defer c.sweep.Unlock()
	if c.size.Load() <= c.sweepAt.Load() {
		return // swept by another new key
	}
	var kept int64
	var swept []any // deleted after the Range, which deletions could lead astray
	c.m.Range(func(k, v any) bool {
		if v.(*entry).n.CompareAndSwap(0, -1) {
			swept = append(swept, k, v)
		} else {
			kept++
		}
		return true
	})
	for i := 0; i < len(swept); i += 2 {
		c.m.CompareAndDelete(swept[i], swept[i+1])
	}
	c.size.Add(-int64(len(swept) / 2))
	// The threshold grows with the keys that hold something only.
	c.sweepAt.Store(c.size.Load() + max(sweepMin, kept))
}

// Release gives back the unit h holds; call it once.
func (h Hold) Release() {
	if h.e == nil {
		return
	}
	h.e.n.Add(-1)
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

// Keys returns how many keys have an entry (holding something, or idle
// until the next sweep).
func (c *Counter) Keys() int {
	if c == nil {
		return 0
	}
	return int(c.size.Load())
}
