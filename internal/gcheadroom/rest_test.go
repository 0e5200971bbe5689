package gcheadroom_test

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/gcheadroom"
)

func TestReleaseAtRest(t *testing.T) {
	const MiB = 1 << 20
	tests := []struct {
		name                             string
		allocated, spare, live, headroom uint64
		want                             bool
	}{
		{"quiet after a burst: release", 0, 100 * MiB, 170 * MiB, 32 * MiB, true},
		{"a trickle is rest", gcheadroom.RestAllocs - 1, 100 * MiB, 170 * MiB, 32 * MiB, true},
		{"under load: the pacing decides", gcheadroom.RestAllocs, 100 * MiB, 170 * MiB, 32 * MiB, false},
		{"a heap within the headroom is its room", 0, 28 * MiB, 4 * MiB, 32 * MiB, false},
		{"past the headroom: release", 0, 29 * MiB, 4 * MiB, 32 * MiB, true},
		{"a sixteenth of a large live heap or less: not worth a collection", 0, 32 * MiB, 512 * MiB, 32 * MiB, false},
		{"more than a sixteenth of it", 0, 33 * MiB, 512 * MiB, 32 * MiB, true},
		{"no headroom: past a sixteenth of the live heap", 0, 5 * MiB, 64 * MiB, 0, true},
		{"no headroom: MinRelease at least", 0, gcheadroom.MinRelease, 1 * MiB, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, gcheadroom.ReleaseAtRest(tt.allocated, tt.spare, tt.live, tt.headroom))
		})
	}
}

// TestStartReleasesTheGarbageAtRest: garbage past the headroom is kept
// while the process allocates, and collected and returned to the
// operating system at the first interval of rest, once.
func TestStartReleasesTheGarbageAtRest(t *testing.T) {
	setGC(t)

	const headroom = 16 << 20
	tuner := startClocked(t, headroom, true)

	garbageKept(64)
	tuner.tick() // the interval of the allocations: not rest
	assert.Zero(t, tuner.Releases(), "released while allocating")

	before, n := readHeap(), tuner.Tunes()
	tuner.tick() // an interval with next to no allocation: rest
	require.Equal(t, int64(1), tuner.Releases(), "no release at rest")
	after := readHeap()
	assert.Less(t, after.objects, before.objects-48<<20, "the garbage was not collected")
	assert.Less(t, after.retained, before.retained-48<<20, "the freed memory was not returned to the operating system")
	waitTune(t, tuner.Tuner, n)

	tuner.tick()
	tuner.tick()
	assert.Equal(t, int64(1), tuner.Releases(), "released again with nothing to release")
}

func TestReleaseAtLongRest(t *testing.T) {
	const MiB = 1 << 20
	tests := []struct {
		name                   string
		allocated, spare, live uint64
		want                   bool
	}{
		{"spare within the headroom: released", 0, 8 * MiB, 4 * MiB, true},
		{"a trickle is rest", gcheadroom.RestAllocs - 1, 8 * MiB, 4 * MiB, true},
		{"an interval of load: not now", gcheadroom.RestAllocs, 8 * MiB, 4 * MiB, false},
		{"MinLongRelease at least", 0, gcheadroom.MinLongRelease, 1 * MiB, false},
		{"a sixteenth of the live heap or less: not worth a collection", 0, 16 * MiB, 256 * MiB, false},
		{"more than a sixteenth of it", 0, 17 * MiB, 256 * MiB, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, gcheadroom.ReleaseAtLongRest(tt.allocated, tt.spare, tt.live))
		})
	}
}

// TestStartReleasesTheHeapAtALongRest: garbage within the headroom stays
// through a short rest, and is collected and returned to the operating
// system when the rest has lasted long enough to release the
// executable's pages, before they are released.
func TestStartReleasesTheHeapAtALongRest(t *testing.T) {
	setGC(t)

	const headroom = 256 << 20 // far above the garbage
	tuner := startClocked(t, headroom, true)
	garbageKept(32)
	tuner.tick() // the interval of the allocations: not rest

	for range gcheadroom.RestPages/2 - 2 {
		tuner.tick()
	}
	require.Zero(t, tuner.pages.Load(), "the pages released before RestPages intervals at rest")
	assert.Zero(t, tuner.Releases(), "the heap released within the headroom before a long rest")
	before := readHeap()
	for range 4 {
		tuner.tick()
	}
	require.Equal(t, int64(1), tuner.pages.Load(), "no long rest")
	require.Equal(t, int64(1), tuner.Releases(), "the heap not released at the long rest")
	after := readHeap()
	assert.Less(t, after.objects, before.objects-24<<20, "the garbage was not collected")
	assert.Less(t, after.retained, before.retained-24<<20, "the freed memory was not returned to the operating system")
}

// TestStartReleasesThePagesOnceARest: the executable's pages are released
// once the RestPages intervals since Start used under RestCPU each on
// average, once, and again after a load and RestPages intervals of rest.
func TestStartReleasesThePagesOnceARest(t *testing.T) {
	setGC(t)
	tuner := startClocked(t, 16<<20, true)
	// Each tick has the watch handle one interval and receive the next.
	ticks := func(intervals int) {
		for range intervals / 2 {
			tuner.tick()
		}
	}
	require.Equal(t, 0, gcheadroom.RestPages%2, "ticks counts intervals in pairs")

	ticks(gcheadroom.RestPages - 2) // handled: RestPages-3 intervals
	assert.Zero(t, tuner.pages.Load(), "released before RestPages intervals at rest")
	ticks(4) // handled: RestPages+1
	assert.Equal(t, int64(1), tuner.pages.Load(), "not released at RestPages intervals at rest")
	ticks(4 * gcheadroom.RestPages)
	assert.Equal(t, int64(1), tuner.pages.Load(), "released again in the same rest")

	// A load (in the interval being handled, or the next one), then
	// RestPages intervals of rest, handled.
	tuner.cpu.Add(int64(gcheadroom.RestPages * gcheadroom.RestCPU))
	ticks(gcheadroom.RestPages + 2)
	assert.Equal(t, int64(2), tuner.pages.Load(), "not released in the rest after a load")
}

// TestReleaseKeepsTheHeadroom: a release's collection is not an interval of
// the load's, so the first collection after it keeps the headroom the
// load before it earned, as the first collection after a pause does.
func TestReleaseKeepsTheHeadroom(t *testing.T) {
	setGC(t)

	const headroom = 64 << 20 // above this test binary's live heap and stacks
	tuner := startClocked(t, headroom, true)
	tuner.collect(t, time.Millisecond, 64) // a busy millisecond earns it all
	require.Greater(t, memoryLimit(), int64(headroom), "the load's headroom")

	// A burst that leaves more garbage than the headroom, then rest.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 40)
	for range 96 << 10 {
		garbage = make([]byte, 1024)
	}
	garbage = nil
	tuner.clock.Add(int64(10 * time.Second))
	tuner.tick()
	n := tuner.Tunes()
	tuner.tick()
	require.Equal(t, int64(1), tuner.Releases(), "no release at rest")
	waitTune(t, tuner.Tuner, n)
	assert.Greater(t, memoryLimit(), int64(headroom), "the release's tuning kept the headroom")

	tuner.collect(t, 10*time.Second, 0)
	assert.Greater(t, memoryLimit(), int64(headroom), "the first collection after the release keeps it")
	tuner.collect(t, 10*time.Second, 0)
	assert.Less(t, memoryLimit(), int64(headroom/2), "a second quiet interval gives it up")
}

// waitTune waits for the tuning after the collection that released, which
// runs on the finalizer goroutine, without collecting again: a collection
// of its own would be an interval of the load's.
func waitTune(t *testing.T, tuner *gcheadroom.Tuner, n int64) {
	t.Helper()
	// Yielding until it comes, for as long as a loaded machine (-race,
	// packages in parallel) may take to schedule the finalizer goroutine: a
	// count of yields ran out there once.
	for deadline := time.Now().Add(time.Minute); tuner.Tunes() == n && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	require.Greater(t, tuner.Tunes(), n, "no tuning after the release's collection")
}

// heap is what the heap occupies in objects, live and dead, and what it
// holds of the operating system's memory: its objects, the free slots in
// their spans, and the free pages it has not returned.
type heap struct{ objects, retained uint64 }

func readHeap() heap {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
	}
	metrics.Read(s)
	objects := s[0].Value.Uint64()
	return heap{objects: objects, retained: objects + s[1].Value.Uint64() + s[2].Value.Uint64()}
}

// TestPagesWatch: a scrape now and then is rest, a trickle of calls over
// RestCPU an interval on average is not, and a rest releases once, and
// again when it grows quieter after a trickle.
func TestPagesWatch(t *testing.T) {
	const n = gcheadroom.RestPages
	tests := []struct {
		name  string
		every func(i int) time.Duration // CPU time used in interval i
		want  []int                     // the intervals that release
	}{
		{"quiet: once, when the window is full", func(int) time.Duration { return 0 }, []int{n}},
		{"a scrape every 30 intervals is rest", func(i int) time.Duration {
			if i%30 == 0 {
				return 10 * time.Millisecond
			}
			return 0
		}, []int{n}},
		{"a trickle at RestCPU on average is not", func(int) time.Duration { return gcheadroom.RestCPU }, nil},
		{"under it on average is", func(int) time.Duration { return gcheadroom.RestCPU - 1 }, []int{n}},
		{"a load, then rest: again once the window has no load", func(i int) time.Duration {
			if i == 2*n {
				return n * gcheadroom.RestCPU
			}
			return 0
		}, []int{n, 3 * n}},
		// A gateway called 5 s in every 25 s rests, and once the calls
		// stop, its pages go again: as soon as its window has used under
		// half of the one before.
		{"a trickle that rests, then quiet: again when quieter", func(i int) time.Duration {
			if i <= 3*n {
				return 2 * time.Millisecond
			}
			return 0
		}, []int{n, 3*n + n/2 + 1}},
		{"a steady trickle under RestCPU: once", func(int) time.Duration { return 2 * time.Millisecond }, []int{n}},
		{"quieter, but hardly used since the release: once", func(i int) time.Duration {
			if i <= n+5 {
				return 2 * time.Millisecond
			}
			return 0
		}, []int{n}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			var cpu time.Duration
			w := gcheadroom.NewPagesWatch(cpu)
			for i := 1; i <= 5*n; i++ {
				cpu += tt.every(i)
				if w.Read(cpu) {
					got = append(got, i)
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestPagesWatchEvery: a watch told to release every k intervals does,
// under load and at rest, from the k-th interval after its first reading.
func TestPagesWatchEvery(t *testing.T) {
	var cpu time.Duration
	w := gcheadroom.NewPagesWatchEvery(cpu, 3)
	var got []int
	for i := 1; i <= 10; i++ {
		if i > 5 {
			cpu += gcheadroom.RestPages * gcheadroom.RestCPU // a load
		}
		if w.Read(cpu) {
			got = append(got, i)
		}
	}
	assert.Equal(t, []int{3, 6, 9}, got)
}

// garbageKept turns mib MiB of small objects into garbage with the
// collector off, so that they stay in the heap (setGC puts it back).
func garbageKept(mib int) {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(1 << 40)
	for range mib << 10 {
		garbage = make([]byte, 1024)
	}
	garbage = nil
}
