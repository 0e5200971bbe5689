package gcheadroom

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/cputime"
)

// DefaultHeadroomMiB is the headroom, in MiB, that the shipped binaries
// start the tuner with unless told otherwise (-gc-headroom).
const DefaultHeadroomMiB = 32

// FlagUsage is the usage of the shipped binaries' -gc-headroom flag, the
// headroom in MiB.
const FlagUsage = "let the heap grow to up to this many `MiB` in all (live heap included) before the garbage collector runs, " +
	"so that a small heap under load is not collected many times a second: as much as a quarter second of small allocations takes " +
	"(large payloads and a server at rest earn none); a larger live heap gets GOGC's goal, up to twice its room while a quarter second of small allocations takes more, and the memory limit holds the heap " +
	"to that goal (RSS may grow by this much); at rest (under half a MiB allocated a second), a heap over this holding garbage " +
	"and free pages of more than a sixteenth of the live heap is collected and the memory returned to the system, and after 30 s at rest " +
	"(under a hundredth of a core) the executable's pages leave the resident memory until they run again (0: GOGC alone, and neither)"

// The runtime/metrics the tuner reads after each collection: the heap
// the collection marked live, and the memory the runtime holds, by class.
var sampled = [...]string{
	"/gc/heap/live:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/gc/scan/globals:bytes",
	"/gc/scan/heap:bytes",
}

// bySize is the runtime/metrics histogram of the objects allocated, by
// size: every bucket up to 32 KiB is one size class, the last one holds the
// large objects.
const bySize = "/gc/heap/allocs-by-size:bytes"

// Tuner adjusts GOGC and the memory limit after every collection; see
// [Start].
type Tuner struct {
	headroom     uint64
	base         int   // the GOGC percent to go back to, and the least one set
	limit        int64 // the memory limit to go back to (GOMEMLIMIT), and the most one set
	stopped      atomic.Bool
	percent      atomic.Int64 // the GOGC percent set last
	sample       []metrics.Sample
	sizes        []metrics.Sample     // bySize
	small        uint64               // bytes allocated in small objects, up to the last tuning
	now          func() time.Time     // the clock: time.Now
	tuned        time.Time            // the last tuning
	earned       uint64               // the headroom the interval before the last tuning earned (HeadroomFor)
	quarter      uint64               // the small garbage of a quarter second at that interval's rate (QuarterFor)
	tunes        atomic.Int64         // tunings so far
	resting      atomic.Bool          // the next tuning follows a release's collection (rest.go)
	releasePages func()               // releases the executable's pages at rest (rest.go)
	pagesEvery   int                  // >0: releasePages every that many RestIntervals, rest or not
	cpu          func() time.Duration // the process's CPU time so far, for the pages' rest; negative: unknown
	releases     atomic.Int64         // releases so far
	ticker       *time.Ticker         // the rest watch's; nil: none
	stop         chan struct{}        // closed by Stop: the rest watch returns
	watched      chan struct{}        // closed when the rest watch has returned
}

// Start makes every collection from now on set GOGC so that the next heap
// goal is at least the headroom the small allocations earn (see
// [HeadroomFor]), up to headroom bytes in all (live heap included), and never
// below base (GOGC's value now, when it is positive); and the memory limit
// so that the heap does not outgrow that goal before the next collection
// re-tunes (see [LimitFor]), never above the limit set before (GOMEMLIMIT).
// Every [RestInterval] it also looks for rest, and when the process has
// gone quiet with a heap over the headroom and spare memory worth a
// collection, collects and gives the memory back (see [ReleaseAtRest]);
// and once a rest has lasted RestPages intervals, it gives back the
// heap's spare memory, headroom or not (see [ReleaseAtLongRest]), and
// releases the executable's pages, once (see [RestPages]). It returns nil, changing
// nothing, when headroom is 0 or the collector is off (GOGC=off).
func Start(headroom uint64) *Tuner { return StartReleasing(headroom, 0, releasePages) }

// StartReleasing is [Start] with pages called where Start releases the
// executable's pages (exepages.Release), such as a main that logs what
// the release gave back. When every is positive, pages is called every
// every RestIntervals whatever the load, instead of once a rest: a
// binary's tests, which cannot wait 30 s for each of many rests, build it
// so (cmd/vigil's pagesEvery); never a production build, whose load would
// map back every page it runs each time.
func StartReleasing(headroom uint64, every int, pages func()) *Tuner {
	ticker := time.NewTicker(RestInterval)
	t := start(headroom, time.Now, ticker.C, cputime.Process, pages, every)
	if t == nil {
		ticker.Stop()
		return nil
	}
	t.ticker = ticker
	return t
}

// start is Start with the clock the small allocations' rate is timed by,
// the ticks the rest watch looks for rest at (nil: no rest watch), the
// process's CPU time, what releases the executable's pages at rest and,
// when positive, every how many ticks it does whatever the load (see
// [StartReleasing]).
func start(headroom uint64, now func() time.Time, ticks <-chan time.Time, cpu func() time.Duration, pages func(), every int) *Tuner {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if headroom == 0 || base < 0 {
		return nil
	}
	t := &Tuner{
		headroom: headroom, base: base, limit: debug.SetMemoryLimit(-1),
		sample: samples(sampled[:]), sizes: []metrics.Sample{{Name: bySize}}, now: now, tuned: now(),
		cpu: cpu, releasePages: pages, pagesEvery: every,
	}
	t.small, _ = smallBytes(t.sizes)
	t.percent.Store(int64(base))
	t.arm()
	if ticks != nil {
		t.stop, t.watched = make(chan struct{}), make(chan struct{})
		t.watchRest(ticks, t.stop, t.watched)
	}
	return t
}

// Percent returns the GOGC percent the tuner set last.
func (t *Tuner) Percent() int { return int(t.percent.Load()) }

// Stop ends the tuning and the rest watch, and restores GOGC and the
// memory limit to their values before Start.
func (t *Tuner) Stop() {
	if t == nil || t.stopped.Swap(true) {
		return
	}
	if t.stop != nil {
		close(t.stop)
		<-t.watched
	}
	if t.ticker != nil {
		t.ticker.Stop()
	}
	debug.SetGCPercent(t.base)
	debug.SetMemoryLimit(t.limit)
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

// tune sets GOGC and the memory limit from the collection that just
// ended, and arms the next one.
func (t *Tuner) tune() {
	if t.stopped.Load() {
		return
	}
	var v [len(sampled)]uint64
	if !readUint64s(t.sample, v[:]) {
		t.arm()
		return
	}
	// A release's collection (rest.go) ends no interval of the load's:
	// the headroom stays what the load earned, and the next collection's
	// interval starts where the last one before the release ended.
	headroom, quarter := t.earned, t.quarter
	if !t.resting.Swap(false) {
		small, ok := smallBytes(t.sizes)
		if !ok {
			t.arm()
			return
		}
		// An interval of no time (two collections at one reading of the
		// clock) tells no rate: it goes on to the next collection's.
		now := t.now()
		if elapsed := now.Sub(t.tuned); elapsed > 0 {
			allocated := small - min(t.small, small)
			earned, q := HeadroomFor(t.headroom, allocated, elapsed), QuarterFor(allocated, elapsed)
			// The larger of what this interval and the one before earned:
			// the first collection after a pause in the load counts the
			// pause in its interval, and would take the headroom away for
			// one collection.
			headroom, quarter = max(earned, t.earned), max(q, t.quarter)
			t.small, t.tuned, t.earned, t.quarter = small, now, earned, q
		}
	}
	live, scan, roots := v[0], min(v[8], v[0]), v[6]+v[7]
	base := BaseFor(live, scan, roots, quarter, t.headroom, t.base)
	if p := PercentFor(live, headroom, base); int64(p) != t.percent.Load() {
		t.percent.Store(int64(p))
		debug.SetGCPercent(p)
	}
	heap := v[2] + v[3] + v[4] + v[5]
	debug.SetMemoryLimit(LimitFor(live, scan, roots, headroom, RoomFor(t.headroom, headroom), base, v[1]-min(heap, v[1]), t.limit))
	t.tunes.Add(1)
	t.arm()
}

// samples returns the runtime/metrics samples of names.
func samples(names []string) []metrics.Sample {
	s := make([]metrics.Sample, len(names))
	for i, name := range names {
		s[i].Name = name
	}
	return s
}

// readUint64s reads the samples into v, one value each, and reports
// whether every one is a uint64 (the runtime has each metric).
func readUint64s(s []metrics.Sample, v []uint64) bool {
	metrics.Read(s)
	for i := range s {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return false
		}
		v[i] = s[i].Value.Uint64()
	}
	return true
}

// smallBytes reads the bytes allocated so far in small objects from the
// bySize histogram: each bucket's count times its size class (the bucket's
// upper bound, exclusive); the last bucket, unbounded, holds the large
// objects.
func smallBytes(sizes []metrics.Sample) (uint64, bool) {
	metrics.Read(sizes)
	if sizes[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, false
	}
	h := sizes[0].Value.Float64Histogram()
	var small uint64
	for i, n := range h.Counts {
		if hi := h.Buckets[i+1]; !math.IsInf(hi, 1) {
			small += n * uint64(math.Ceil(hi)-1)
		}
	}
	return small, true
}

// HeadroomFor returns the part of headroom that the small allocations
// since the last collection earn: the bytes that the same rate of small
// objects (up to 32 KiB: small bytes over elapsed) allocates in
// smallGarbageSpan, up to headroom; all of it when elapsed is not
// positive. The headroom spares a small heap the many collections a
// second that many small allocations (requests' garbage) would cost, and
// scales with them: a service at rest, or moving large payloads (few
// allocations of many bytes each, whose garbage gets the room of
// [LimitFor]), holds the heap it needs and that room, not the whole
// headroom besides; and the heap of a service that starts to move them
// grows by that room, not by the headroom, before the tuner sees them.
func HeadroomFor(headroom, small uint64, elapsed time.Duration) uint64 {
	if elapsed <= 0 {
		return headroom
	}
	return min(headroom, QuarterFor(small, elapsed))
}

// QuarterFor returns the bytes that small objects allocated at the rate
// of small bytes in elapsed take in smallGarbageSpan (a quarter second);
// as many as a uint64 holds when elapsed is not positive, as
// [HeadroomFor] earns all of the headroom then.
func QuarterFor(small uint64, elapsed time.Duration) uint64 {
	if elapsed <= 0 {
		return math.MaxUint64
	}
	return uint64(min(float64(small)*float64(smallGarbageSpan)/float64(elapsed), math.MaxUint64/2))
}

// BaseFor returns the GOGC percent a live heap of live bytes gets at
// least, past the headroom (see [PercentFor] and [LimitFor]): base (GOGC's
// value at Start), or more when a quarter second of small allocations
// (quarter bytes, see [QuarterFor]) takes more than base's room, up to a
// room of twice base's share of what a collection scans (the heap's
// scannable bytes, scan, and the roots: stacks and globals, as for
// LimitFor) and at most twice base, rounded up to a multiple of 25. A
// collection costs in proportion to what it scans, at thousands of
// connections mostly their goroutines' stacks, whose GOGC=100 room small
// requests filled several times as often as smallGarbageSpan means. The
// room bounds the heap at what GOGC=200 holds; payloads, whose bytes no
// collection scans, earn none of it (docs/perf/ROUNDS.md, issue 88). A
// heap whose live bytes and roots stay within headroom gets base: the
// headroom is its room already.
func BaseFor(live, scan, roots, quarter, headroom uint64, base int) int {
	if live == 0 || base <= 0 || live+roots < headroom {
		return base
	}
	room := min(quarter, (scan+roots)*2*uint64(base)/100)
	p := (room*100 + live - 1) / live
	p = (p + 24) / 25 * 25
	return int(min(max(uint64(base), p), 2*uint64(base)))
}

// smallGarbageSpan is how long the small garbage the headroom holds takes
// to allocate, at most: with a headroom of its own, a load collects about
// four times a second at most because of its small allocations.
const smallGarbageSpan = 250 * time.Millisecond

// RoomFor returns the least room for garbage that the memory limit
// leaves a heap of any size (see [LimitFor]), with the configured
// headroom and the part of it the small allocations earned
// ([HeadroomFor]): a quarter of the headroom, or what a quarter second of
// small allocations takes when that is more. Without the earned part a
// live heap over the headroom (2,048 connections' buffers and stacks) was
// collected as often as its scan cost allowed, more often under a load
// of small requests than the four times a second smallGarbageSpan means,
// and the CPU per request grew with the connections held
// (docs/perf/ROUNDS.md, issue 88). Payloads earn no room: they are not
// small allocations.
func RoomFor(headroom, earned uint64) uint64 { return max(headroom/4, earned) }

// LimitFor returns the memory limit that keeps the heap of live bytes
// within the goal the tuner wants for it, plus an eighth for the pages the
// runtime keeps free and the runtime's memory besides the heap (nonHeap:
// stacks, metadata), never above ceiling. The goal is max(headroom, live +
// max((scan+roots)×base/100, room)): the room for garbage between
// two collections is proportional to what a collection costs, the
// scannable part of the live heap (scan) and the roots (the goroutine
// stacks, the memory they hold, and the globals), not to the live heap
// alone. A collection never scans a payload's bytes (a []byte has no
// pointers): large payloads in flight then cost their own size and little
// garbage, not twice; thousands of connections' stacks give as much more
// room as they cost, instead of more collections. The room is room at
// least (the tuner's is a quarter of the configured headroom), so that a
// heap of payloads alone is not collected every few allocations.
func LimitFor(live, scan, roots, headroom, room uint64, base int, nonHeap uint64, ceiling int64) int64 {
	goal := max(headroom, live+max((scan+roots)*uint64(base)/100, room))
	limit := nonHeap + goal + goal/8
	if limit > uint64(ceiling) {
		return ceiling
	}
	return int64(limit)
}

// maxPercent bounds GOGC when the live heap is tiny, so that the goal of
// a near-empty heap stays about the headroom, not a number that overflows.
const maxPercent = 1 << 20

// PercentFor returns the GOGC percent that puts the heap goal of a live
// heap of live bytes at headroom bytes at least, live heap included, and
// never below base: max(base, ⌈(headroom−live)×100/live⌉), rounded up to
// a multiple of 25 so that small changes of the live heap do not reset
// GOGC each collection. A live heap of headroom/2 or more gets base.
func PercentFor(live, headroom uint64, base int) int {
	if live == 0 {
		return maxPercent
	}
	if live >= headroom {
		return base
	}
	p := ((headroom-live)*100 + live - 1) / live
	p = (p + 24) / 25 * 25
	if p > maxPercent {
		return maxPercent
	}
	return max(base, int(p))
}
