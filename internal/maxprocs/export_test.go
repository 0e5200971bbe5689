package maxprocs

import (
	"log/slog"
	"time"
)

// StartWith is Start with the default Ps most, the clock now, the CPU
// time cpu and the Ps get read at each of ticks, and set in place of the
// runtime's setting, whatever GOMAXPROCS says.
func StartWith(logger *slog.Logger, most int, ticks <-chan time.Time, now func() time.Time, cpu func() time.Duration, set func(int), get func() int) *Follower {
	return start(logger, most, ticks, now, cpu, set, get)
}

// SetProcs is what Start sets the runtime's Ps with.
var SetProcs = setProcs
