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
	return start(headroom, func() time.Time { return origin.Add(time.Duration(ticks.Add(1)) * step) })
}

// StartClock is Start with the clock now.
func StartClock(headroom uint64, now func() time.Time) *Tuner { return start(headroom, now) }

// Tunes returns how many times t has tuned.
func (t *Tuner) Tunes() int64 { return t.tunes.Load() }
