package gcheadroom

import (
	"sync/atomic"
	"time"
)

// StartTicking is Start with a clock that moves step forward at each
// reading: the rate of small allocations the tuner sees is then what the
// test allocates, however slow the machine.
func StartTicking(headroom uint64, step time.Duration) *Tuner {
	var ticks atomic.Int64
	origin := time.Now()
	return start(headroom, func() time.Time { return origin.Add(time.Duration(ticks.Add(1)) * step) }, nil, func() time.Duration { return 0 }, func() {}, 0)
}

// StartClock is Start with the clock now, the rest watch looking for rest
// at each of ticks instead of every RestInterval (nil: no rest watch), the
// process's CPU time read from cpu, and pages called where Start releases
// the executable's pages.
func StartClock(headroom uint64, now func() time.Time, ticks <-chan time.Time, cpu func() time.Duration, pages func()) *Tuner {
	return start(headroom, now, ticks, cpu, pages, 0)
}

// Releases returns how many times t has released the garbage at rest.
func (t *Tuner) Releases() int64 { return t.releases.Load() }

// Tunes returns how many times t has tuned.
func (t *Tuner) Tunes() int64 { return t.tunes.Load() }

// PagesWatch is the rest watch's decision to release the executable's
// pages.
type PagesWatch = pagesWatch

// NewPagesWatch returns a watch whose first reading, at Start, is cpu.
func NewPagesWatch(cpu time.Duration) *PagesWatch {
	w := &pagesWatch{}
	w.read(cpu)
	return w
}

// NewPagesWatchEvery returns a watch that releases every every
// intervals, whose first reading is cpu.
func NewPagesWatchEvery(cpu time.Duration, every int) *PagesWatch {
	w := &pagesWatch{every: every}
	w.read(cpu)
	return w
}

// Read is read.
func (w *PagesWatch) Read(cpu time.Duration) bool { return w.read(cpu) }
