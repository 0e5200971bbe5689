package maxprocs_test

import (
	"crypto/sha256"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/cputime"
	"github.com/vigil-mcp/vigil/internal/maxprocs"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNext(t *testing.T) {
	tests := []struct {
		name  string
		procs int
		busy  float64
		want  int
	}{
		{"default, quiet: one P (after Quiet intervals)", 4, 0.1, 1},
		{"default, just under Down: one P", 4, maxprocs.Down - 0.01, 1},
		{"default, between Down and Up: stays", 4, 0.5, 4},
		{"default, busy: stays", 4, 3.5, 4},
		{"one P, quiet: stays", 1, 0.1, 1},
		{"one P, between Down and Up: stays", 1, 0.5, 1},
		{"one P, just over Up: the default", 1, maxprocs.Up + 0.01, 4},
		{"one P, saturated: the default", 1, 1.0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, maxprocs.Next(tt.procs, 4, tt.busy))
		})
	}
}

// follower drives a follower with a clock and a CPU time of the test's:
// each step moves the clock a second and the CPU time by the cores given,
// ticks, and returns what the follower set (0: nothing).
type follower struct {
	ticks chan time.Time
	sets  chan int
	wall  atomic.Int64 // nanoseconds
	cpu   atomic.Int64
	procs atomic.Int64 // what the follower reads as the process's Ps: its last setting, or another's
	f     *maxprocs.Follower
}

func newFollower(most int) *follower {
	fl := &follower{ticks: make(chan time.Time), sets: make(chan int, 1)}
	fl.procs.Store(int64(most))
	fl.f = maxprocs.StartWith(slog.New(slog.DiscardHandler), most, fl.ticks,
		func() time.Time { return time.Unix(0, fl.wall.Load()) },
		func() time.Duration { return time.Duration(fl.cpu.Load()) },
		func(n int) { fl.procs.Store(int64(n)); fl.sets <- n },
		func() int { return int(fl.procs.Load()) })
	return fl
}

// step runs an interval of a second using busy cores; the follower has
// read it when step returns (an unbuffered tick is taken only once the
// last one is done).
func (fl *follower) step(busy float64) int {
	fl.wall.Add(int64(time.Second))
	fl.cpu.Add(int64(busy * float64(time.Second)))
	fl.ticks <- time.Time{}
	fl.ticks <- time.Time{} // a second tick, an interval of 0 s (skipped): the first one's setting is made
	select {
	case n := <-fl.sets:
		return n
	default:
		return 0
	}
}

// quiet steps n quiet intervals and returns what the last one set.
func (fl *follower) quiet(t *testing.T, n int) int {
	for range n - 1 {
		require.Equal(t, 0, fl.step(0.05), "quiet for less than Quiet intervals: no change")
	}
	return fl.step(0.05)
}

func TestFollowerFollowsTheLoad(t *testing.T) {
	fl := newFollower(4)
	assert.Equal(t, 1, fl.quiet(t, maxprocs.Quiet), "quiet for Quiet intervals: one P")
	assert.Equal(t, 0, fl.step(0.5), "moderate on one P: no change")
	assert.Equal(t, 4, fl.step(0.9), "busy on one P: the default back at once")
	assert.Equal(t, 0, fl.step(0.5), "moderate on the default: no change (it costs more there)")
	assert.Equal(t, 0, fl.step(0.2), "one quiet interval: the Ps are kept")
	assert.Equal(t, 0, fl.step(0.5), "a pause's end")
	assert.Equal(t, 1, fl.quiet(t, maxprocs.Quiet), "quiet again for Quiet intervals: one P")
	fl.f.Stop()
	assert.Equal(t, 4, <-fl.sets, "Stop gives the default back")
}

// Ps another gave back (the overload shedder, at a burst's first busy
// interval) are the follower's from its next interval: it does not set
// them again, and drops to one P after Quiet quiet intervals as from its
// own.
func TestFollowerSeesPsGivenBack(t *testing.T) {
	fl := newFollower(4)
	require.Equal(t, 1, fl.quiet(t, maxprocs.Quiet))
	fl.procs.Store(4) // the shedder's runtime.GOMAXPROCS(4)
	assert.Equal(t, 0, fl.step(0.9), "busy on the Ps given back: nothing to set")
	assert.Equal(t, 1, fl.quiet(t, maxprocs.Quiet), "quiet again: one P")
	fl.f.Stop()
	assert.Equal(t, 4, <-fl.sets, "Stop gives the default back")
}

func TestFollowerStopAtTheDefaultSetsNothing(t *testing.T) {
	fl := newFollower(2)
	assert.Equal(t, 0, fl.step(1.5))
	fl.f.Stop()
	select {
	case n := <-fl.sets:
		t.Fatalf("Stop set %d Ps at the default", n)
	default:
	}
}

// The follower on the runtime itself: quiet, GOMAXPROCS drops to 1; a
// core's worth of hashing in the next interval brings the default back.
func TestFollowerOnTheRuntime(t *testing.T) {
	most := runtime.GOMAXPROCS(0)
	if most < 2 {
		t.Skipf("GOMAXPROCS is %d: nothing to follow", most)
	}
	ticks, set := make(chan time.Time), make(chan int)
	var wall atomic.Int64
	f := maxprocs.StartWith(slog.New(slog.DiscardHandler), most, ticks,
		func() time.Time { return time.Unix(0, wall.Load()) },
		cputime.Process,
		func(n int) { maxprocs.SetProcs(n); set <- n },
		func() int { return runtime.GOMAXPROCS(0) })
	defer func() {
		go func() { // Stop may set the default
			for range set {
			}
		}()
		f.Stop()
		close(set)
		assert.Equal(t, most, runtime.GOMAXPROCS(0), "the default after Stop")
	}()

quiet:
	for { // intervals of ten seconds of wall time, a few ms of CPU, until it drops
		wall.Add(int64(10 * time.Second))
		select {
		case ticks <- time.Time{}:
		case n := <-set:
			require.Equal(t, 1, n)
			break quiet
		}
	}
	assert.Equal(t, 1, runtime.GOMAXPROCS(0))

	start := cputime.Process()
	sum := sha256.Sum256(nil)
	for cputime.Process()-start < 200*time.Millisecond { // 200 ms of CPU in a 200 ms interval: a core
		for range 1000 {
			sum = sha256.Sum256(sum[:])
		}
	}
	wall.Add(int64(200 * time.Millisecond))
	ticks <- time.Time{}
	require.Equal(t, most, <-set)
	assert.Equal(t, most, runtime.GOMAXPROCS(0), "busy: the default again")
}

func TestStartLeavesTheOperatorsSetting(t *testing.T) {
	t.Setenv("GOMAXPROCS", "2")
	f := maxprocs.Start(slog.New(slog.DiscardHandler))
	assert.Nil(t, f, "GOMAXPROCS set: nothing to follow")
	f.Stop() // a nil follower's Stop does nothing
}
