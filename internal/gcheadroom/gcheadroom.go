package gcheadroom

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// liveHeap is the runtime/metrics name of the heap the last collection
// marked live.
const liveHeap = "/gc/heap/live:bytes"

// Tuner adjusts GOGC after every collection; see [Start].
type Tuner struct {
	headroom uint64
	base     int // the GOGC percent to go back to, and the least one set
	stopped  atomic.Bool
	percent  atomic.Int64 // the GOGC percent set last
	sample   []metrics.Sample
}

// Start makes every collection from now on set GOGC so that the next heap
// goal is at least headroom bytes above the live heap, and never below
// base (GOGC's value now, when it is positive). It returns nil, changing
// nothing, when headroom is 0 or the collector is off (GOGC=off).
func Start(headroom uint64) *Tuner {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if headroom == 0 || base < 0 {
		return nil
	}
	t := &Tuner{headroom: headroom, base: base, sample: []metrics.Sample{{Name: liveHeap}}}
	t.percent.Store(int64(base))
	t.arm()
	return t
}

// Percent returns the GOGC percent the tuner set last.
func (t *Tuner) Percent() int { return int(t.percent.Load()) }

// Stop ends the tuning and restores GOGC to its value before Start.
func (t *Tuner) Stop() {
	if t == nil || t.stopped.Swap(true) {
		return
	}
	debug.SetGCPercent(t.base)
}

// arm has the next collection call tune: a new sentinel, unreachable at
// once, whose finalizer runs after the collection that finds it so.
func (t *Tuner) arm() {
	runtime.SetFinalizer(&sentinel{t}, (*sentinel).collected)
}

// sentinel is an object whose collection calls its tuner. It holds a
// pointer so that it is never a tiny allocation: a tiny object shares its
// block with others, and its finalizer waits until they are all garbage.
type sentinel struct{ t *Tuner }

func (s *sentinel) collected() { s.t.tune() }

// tune sets GOGC from the live heap of the collection that just ended,
// and arms the next one.
func (t *Tuner) tune() {
	if t.stopped.Load() {
		return
	}
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		if p := PercentFor(t.sample[0].Value.Uint64(), t.headroom, t.base); int64(p) != t.percent.Load() {
			t.percent.Store(int64(p))
			debug.SetGCPercent(p)
		}
	}
	t.arm()
}

// maxPercent bounds GOGC when the live heap is tiny, so that the goal of
// a near-empty heap stays about the headroom, not a number that overflows.
const maxPercent = 1 << 20

// PercentFor returns the GOGC percent that puts the heap goal of a live
// heap of live bytes at least headroom bytes above it, and never below
// base: max(base, ⌈headroom×100/live⌉), rounded up to a multiple of 25 so
// that small changes of the live heap do not reset GOGC each collection.
func PercentFor(live, headroom uint64, base int) int {
	if live == 0 {
		return maxPercent
	}
	p := (headroom*100 + live - 1) / live
	p = (p + 24) / 25 * 25
	if p > maxPercent {
		return maxPercent
	}
	return max(base, int(p))
}
