package maxprocs

import (
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/vigil-mcp/vigil/internal/cputime"
)

// Interval is how often the follower reads the process's CPU time.
const Interval = 500 * time.Millisecond

// Up is the share of a core that a process on one P may use in an
// interval before it gets the default number of Ps back: past it, calls
// queue behind each other more than a second P's wake-ups cost.
const Up = 0.6

// Down is the share of a core under which a process on the default
// number of Ps drops to one: on one P the same load then uses less than
// Up (it costs less CPU there), so the follower does not flap.
const Down = 0.4

// Quiet is how many intervals in a row a process on the default number of
// Ps must use less than Down before it drops to one P: a load that pauses
// for a second or two (rounds of work, a client's think time) keeps its
// Ps, and only rest costs the interval one P takes to give them back.
const Quiet = 4

// Next returns the Ps for the next interval of a process on procs Ps, whose
// default is most, that used busy cores (CPU time over wall time) in the
// last interval.
func Next(procs, most int, busy float64) int {
	switch {
	case procs == 1 && busy > Up:
		return most
	case procs > 1 && busy < Down:
		return 1
	}
	return procs
}

// Follower sets GOMAXPROCS from the load, until Stop.
type Follower struct {
	stop, done chan struct{}
}

// Start starts a follower that logs its changes at debug level to logger,
// or returns nil when there is nothing to follow: the operator set
// GOMAXPROCS, or the default is one P already. A nil *Follower's Stop
// does nothing.
func Start(logger *slog.Logger) *Follower {
	if _, set := os.LookupEnv("GOMAXPROCS"); set || runtime.GOMAXPROCS(0) <= 1 {
		return nil
	}
	ticker := time.NewTicker(Interval)
	f := start(logger, runtime.GOMAXPROCS(0), ticker.C, time.Now, cputime.Process, setProcs, currentProcs)
	go func() {
		<-f.done
		ticker.Stop()
	}()
	return f
}

// setProcs sets n Ps, or the runtime's default (which then follows the
// cgroup's CPU quota again) when n is not 1.
func setProcs(n int) {
	if n == 1 {
		runtime.GOMAXPROCS(1)
		return
	}
	runtime.SetDefaultGOMAXPROCS()
}

// currentProcs returns the Ps the process runs on now.
func currentProcs() int { return runtime.GOMAXPROCS(0) }

// start runs the follower's loop on a goroutine of its own, reading the
// time, the CPU used and the Ps the process runs on (get: the overload
// shedder gives a burst its Ps back without waiting for the follower) at
// each of ticks, and calling set with the Ps the next interval gets when
// they change, from most, the default.
func start(logger *slog.Logger, most int, ticks <-chan time.Time, now func() time.Time, cpu func() time.Duration, set func(int), get func() int) *Follower {
	f := &Follower{stop: make(chan struct{}), done: make(chan struct{})}
	procs, lastWall, lastCPU, quiet := most, now(), cpu(), 0
	go func() {
		defer close(f.done)
		defer func() {
			if procs != most {
				set(most)
			}
		}()
		for {
			select {
			case <-f.stop:
				return
			case <-ticks:
			}
			wall, used := now(), cpu()
			procs = get()
			elapsed := wall.Sub(lastWall)
			if elapsed <= 0 || used < 0 {
				continue
			}
			busy := float64(used-lastCPU) / float64(elapsed)
			lastWall, lastCPU = wall, used
			next := Next(procs, most, busy)
			if next < procs {
				if quiet++; quiet < Quiet {
					continue
				}
			}
			quiet = 0
			if next != procs {
				set(next)
				logger.Debug("GOMAXPROCS follows the load", "procs", next, "busy_cores", busy)
				procs = next
			}
		}
	}()
	return f
}

// Stop ends the follower and gives the process its default Ps back.
func (f *Follower) Stop() {
	if f == nil {
		return
	}
	close(f.stop)
	<-f.done
}
