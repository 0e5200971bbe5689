// Package logthrottle bounds how many lines a source that repeats itself
// writes to a log: a burst at once, then one a period, and the count of
// the lines left out told on the next one written.
package logthrottle

import (
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Throttle lets through burst lines at once and then one every period;
// it is safe for concurrent use.
type Throttle struct {
	limit   *rate.Limiter
	skipped atomic.Int64
}

// New returns a Throttle of burst lines at once, then one every period.
func New(period time.Duration, burst int) *Throttle {
	return &Throttle{limit: rate.NewLimiter(rate.Every(period), burst)}
}

// Allow reports whether a line may be written now and, when it may, how
// many were left out since the last one written (to be told with it).
func (t *Throttle) Allow() (ok bool, skipped int64) {
	if !t.limit.Allow() {
		t.skipped.Add(1)
		return false, 0
	}
	return true, t.skipped.Swap(0)
}
