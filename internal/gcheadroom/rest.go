package gcheadroom

import (
	"runtime/debug"
	"time"

	"github.com/vigil-mcp/vigil/internal/exepages"
)

// RestInterval is how often the tuner looks for rest: a process that
// allocated less than RestAllocs in one interval is at rest.
const RestInterval = 500 * time.Millisecond

// RestAllocs is the most a process at rest allocates in a RestInterval:
// half a MiB a second, a trickle of requests or a scrape, not a load.
const RestAllocs = 256 << 10

// The runtime/metrics the rest watch reads each interval: the bytes
// allocated so far, what the last collection marked live, what the heap's
// objects, live and dead, occupy now, and the heap's free pages that the
// runtime holds on to.
var restSampled = [...]string{
	"/gc/heap/allocs:bytes",
	"/gc/heap/live:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
}

// ReleaseAtRest reports whether a process that allocated allocated bytes
// in the last RestInterval, and whose heap holds spare bytes besides the
// live bytes its last collection marked (objects allocated since, and free
// pages it keeps), should collect now and give the memory freed back to
// the operating system: it is at rest (under RestAllocs); its heap, live
// and spare, is over the headroom, within which the spare memory is the
// room the tuner grants on purpose; and the spare bytes are worth a
// collection, whose cost grows with the live heap: more than a sixteenth
// of it, and more than MinRelease. Under load the collector's pacing
// decides (see the package doc for why rest differs). spare counts what
// was allocated since the last collection and is still live too: a
// release that finds less to free costs one collection.
func ReleaseAtRest(allocated, spare, live, headroom uint64) bool {
	return allocated < RestAllocs && live+spare > headroom && spare > max(live/16, MinRelease)
}

// MinRelease is the least spare memory that a release at rest gives back.
const MinRelease = 4 << 20

// ReleaseAtLongRest reports whether a rest long enough to release the
// executable's pages (RestPages intervals, see pagesWatch) should also
// collect and give the heap's spare memory back, headroom or not: a
// process whose spare heap bytes number more than a sixteenth of its live
// heap and MinLongRelease, and that allocated under RestAllocs in the
// last interval. The headroom spares a load the collections its garbage
// would cost; a process that has used under RestCPU an interval for that
// long has no load to spare them, and what it holds is resident memory
// for nothing (issue 88: up to the whole headroom, behind an upstream
// whose notifications trickle in, as the last collection before the rest
// left it). A burst after the rest faults the pages in again as it
// allocates, and collects first when its garbage reaches the goal that
// the tuning of the release's collection left (see Tuner.release).
func ReleaseAtLongRest(allocated, spare, live uint64) bool {
	return allocated < RestAllocs && spare > max(live/16, MinLongRelease)
}

// MinLongRelease is the least spare memory that a long rest gives back:
// a collection's worth, the room a trickle of notifications fills in a
// few minutes.
const MinLongRelease = 1 << 20

// RestPages is how many RestIntervals a rest lasts before it releases
// the pages of the executable, once (and again if the rest grows quieter,
// see pagesWatch): the code and read-only data that
// starting up or the load before touched (package exepages), which at
// rest count in the resident memory and are the last memory the kernel
// takes back. Rest here is under RestCPU of CPU time an interval on
// average over the RestPages intervals (30 s), so that a scrape or a
// health check now and then is rest and a trickle of calls is not: a page
// a call runs again costs a page fault (docs/limits.md says what one
// costs), and a load keeps the pages it runs.
const RestPages = 60

// RestCPU is the most CPU time a process at rest uses in a RestInterval
// on average, for its pages: a hundredth of a core. A scrape of /metrics
// takes a few milliseconds, a call a fraction of one: tens of calls a
// second are not rest.
const RestCPU = RestInterval / 100

// pagesWatch decides, from the process's CPU time so far at each
// interval, when a rest releases the executable's pages: once, when the
// last RestPages intervals used under RestCPU each on average, and again
// after a window that did not; or, within a rest, when the process has
// gone quieter: its last RestPages intervals used under half of the
// RestPages before them, and at least rereleaseCPU since the release. A
// trickle of calls that rests the process (a gateway called for 5 s
// every 25 s) maps back the pages it runs, and without the second rule
// kept them once it stopped, for as long as the rest lasted (issue 88: a
// release in the middle of make bench-gateway's interleaved rounds, none
// after them); a steady trickle, a scrape now and then, never goes
// quieter, and keeps the pages it runs.
//
// A watch whose every is positive releases every that many intervals
// instead, whatever the load (see [StartReleasing]).
type pagesWatch struct {
	readings   [2 * RestPages]time.Duration // the CPU time at the last 2*RestPages readings; reading k at k%(2*RestPages)
	k          int                          // the readings so far
	released   bool                         // the pages were released in this rest
	releasedAt time.Duration                // the CPU time at the last release
	every      int                          // >0: release every that many intervals, rest or not
}

// rereleaseCPU is the least CPU time the process uses after a release,
// within a rest, for a quieter stretch to release the pages again: ten
// intervals of rest's worth, a few hundred calls, not a scrape.
const rereleaseCPU = 10 * RestCPU

// read takes the next reading of the CPU time so far, and reports whether
// to release the pages now.
func (w *pagesWatch) read(cpu time.Duration) bool {
	// back returns the reading back readings before this one, if taken.
	back := func(n int) (time.Duration, bool) {
		if n > w.k {
			return 0, false
		}
		return w.readings[(w.k-n)%len(w.readings)], true
	}
	oldest, full := back(RestPages)
	older, fuller := back(2 * RestPages) // the slot this reading takes: read first
	w.readings[w.k%len(w.readings)] = cpu
	w.k++
	if w.every > 0 {
		return (w.k-1)%w.every == 0 && w.k > 1
	}
	if !full {
		return false
	}
	window := cpu - oldest
	if window >= RestPages*RestCPU {
		w.released = false
		return false
	}
	quieter := fuller && 2*window < oldest-older && cpu-w.releasedAt >= rereleaseCPU
	if w.released && !quieter {
		return false
	}
	w.released, w.releasedAt = true, cpu
	return true
}

// watchRest reads the allocations so far, then, on a goroutine of its
// own, at each tick until stop is closed, and releases the garbage (see
// [ReleaseAtRest]) when the process was at rest since the reading before.
// The goroutine closes done when it returns. The first reading is taken
// before watchRest returns, so that what the process allocates after Start
// counts in the first interval.
func (t *Tuner) watchRest(ticks <-chan time.Time, stop <-chan struct{}, done chan<- struct{}) {
	sample := samples(restSampled[:])
	// read returns the bytes allocated so far, the live heap, and the
	// spare bytes besides it (see ReleaseAtRest).
	read := func() (allocs, live, spare uint64, ok bool) {
		var v [len(restSampled)]uint64
		if !readUint64s(sample, v[:]) {
			return 0, 0, 0, false
		}
		return v[0], v[1], v[2] - min(v[1], v[2]) + v[3], true
	}
	last, _, _, _ := read()
	pages := pagesWatch{every: t.pagesEvery}
	pages.read(t.cpu())
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-ticks:
			}
			allocs, live, spare, ok := read()
			if !ok {
				continue
			}
			allocated := allocs - min(last, allocs)
			cpu := t.cpu()
			longRest := cpu >= 0 && pages.read(cpu)
			if longRest && ReleaseAtLongRest(allocated, spare, live) || ReleaseAtRest(allocated, spare, live, t.headroom) {
				t.release()
				allocs, _, _, _ = read() // what the release allocated is not the next interval's
			}
			if longRest { // after the heap's release, whose collection runs code of the executable's too
				t.releasePages()
			}
			last = allocs
		}
	}()
}

// releasePages releases the executable's pages. An error leaves them
// resident, as they were: /proc is not mounted, or the system is not
// Linux (see exepages.Release), and there is nothing else to do.
func releasePages() { _, _ = exepages.Release() }

// release collects and returns the memory freed to the operating system.
// The collection is not an interval of the load's: its tuning keeps the
// headroom the load earned and the interval it is measured over.
func (t *Tuner) release() {
	t.resting.Store(true)
	debug.FreeOSMemory()
	t.releases.Add(1)
}
