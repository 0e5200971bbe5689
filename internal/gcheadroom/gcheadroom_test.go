package gcheadroom_test

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/gcheadroom"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPercentFor(t *testing.T) {
	const MiB = 1 << 20
	tests := []struct {
		name     string
		live     uint64
		headroom uint64
		base     int
		want     int
	}{
		{"small live heap: the goal is headroom in all", 4 * MiB, 32 * MiB, 100, 700},
		{"rounded up to a multiple of 25", 3 * MiB, 32 * MiB, 100, 975},
		{"large live heap: base wins", 64 * MiB, 32 * MiB, 100, 100},
		{"at the crossover: base", 16 * MiB, 32 * MiB, 100, 100},
		{"a live heap over the headroom: base", 40 * MiB, 32 * MiB, 100, 100},
		{"a higher base is kept", 8 * MiB, 32 * MiB, 500, 500},
		{"empty heap: bounded", 0, 32 * MiB, 100, 1 << 20},
		{"one byte live: bounded", 1, 32 * MiB, 100, 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := gcheadroom.PercentFor(tt.live, tt.headroom, tt.base)
			assert.Equal(t, tt.want, got)
			if tt.live > 0 && got < 1<<20 {
				goal := tt.live + tt.live*uint64(got)/100
				assert.GreaterOrEqual(t, goal, tt.headroom, "goal below the headroom")
				assert.Less(t, goal, max(tt.headroom, tt.live+tt.live*uint64(tt.base)/100)+tt.live/4+1,
					"goal above the headroom by more than the rounding to 25")
			}
		})
	}
}

// LimitFor caps the runtime's memory at the goal the tuner wants, an
// eighth more, and the memory besides the heap: a live heap that grows
// between two collections cannot take the goal along (GOGC's goal is
// proportional to the live heap it was set for).
func TestLimitFor(t *testing.T) {
	const MiB = 1 << 20
	assert.Equal(t, int64(8*MiB+36*MiB), gcheadroom.LimitFor(4*MiB, 4*MiB, 0, 32*MiB, 8*MiB, 100, 8*MiB, math.MaxInt64), "small live heap: the headroom")
	assert.Equal(t, int64(8*MiB+90*MiB), gcheadroom.LimitFor(40*MiB, 40*MiB, 0, 32*MiB, 8*MiB, 100, 8*MiB, math.MaxInt64), "large and all scanned: twice the live heap (GOGC=100)")
	assert.Equal(t, int64(8*MiB+135*MiB), gcheadroom.LimitFor(40*MiB, 40*MiB, 0, 32*MiB, 8*MiB, 200, 8*MiB, math.MaxInt64), "GOGC=200: three times")
	assert.Equal(t, int64(20*MiB), gcheadroom.LimitFor(40*MiB, 40*MiB, 0, 32*MiB, 8*MiB, 100, 8*MiB, 20*MiB), "never above GOMEMLIMIT")
	// Payloads in flight: 40 MiB live of which 10 MiB has pointers. The
	// room is what a collection scans, not the payloads' bytes.
	assert.Equal(t, int64(8*MiB+(50*MiB)*9/8), gcheadroom.LimitFor(40*MiB, 10*MiB, 0, 32*MiB, 8*MiB, 100, 8*MiB, math.MaxInt64), "payloads are not scanned")
	assert.Equal(t, int64(8*MiB+(48*MiB)*9/8), gcheadroom.LimitFor(40*MiB, 1*MiB, 0, 32*MiB, 8*MiB, 100, 8*MiB, math.MaxInt64), "the room is a quarter of the headroom at least")
	// 2,048 goroutines with 32 KiB stacks: the goal counts them, as
	// GOGC's own does, or the more goroutines the more collections.
	assert.Equal(t, int64(72*MiB+(10*MiB+74*MiB)*9/8), gcheadroom.LimitFor(10*MiB, 10*MiB, 64*MiB, 32*MiB, 8*MiB, 100, 72*MiB, math.MaxInt64), "stacks and globals count")
}

func TestRoomFor(t *testing.T) {
	const MiB = 1 << 20
	assert.Equal(t, uint64(8*MiB), gcheadroom.RoomFor(32*MiB, 0), "nothing earned (rest, payloads): a quarter of the headroom")
	assert.Equal(t, uint64(32*MiB), gcheadroom.RoomFor(32*MiB, 32*MiB), "a load of small requests: all it earned")
	// 2,048 connections: 25 MiB live, 5 MiB of it scanned, 16 MiB of
	// stacks, under a load of small requests that earns the whole
	// headroom: a quarter second of their garbage fits between two
	// collections, not only as much as a collection scans.
	room := gcheadroom.RoomFor(32*MiB, 32*MiB)
	assert.Equal(t, int64(24*MiB+(57*MiB)*9/8), gcheadroom.LimitFor(25*MiB, 5*MiB, 16*MiB, 32*MiB, room, 100, 24*MiB, math.MaxInt64))
}

func TestHeadroomFor(t *testing.T) {
	const MiB = 1 << 20
	assert.Equal(t, uint64(32*MiB), gcheadroom.HeadroomFor(32*MiB, 0, 0), "no time elapsed: all of it")
	assert.Equal(t, uint64(32*MiB), gcheadroom.HeadroomFor(32*MiB, 200*MiB, time.Second), "200 MiB/s of small objects: all of it")
	assert.Equal(t, uint64(8*MiB), gcheadroom.HeadroomFor(32*MiB, 32*MiB, time.Second), "32 MiB/s: a quarter second's worth")
	assert.Equal(t, uint64(0), gcheadroom.HeadroomFor(32*MiB, 0, 2*time.Minute), "at rest: none")
	// 1 MiB payloads at 1.5 GB/s with 12 MB/s of small garbage (echo's
	// 40k requests a second allocate 200 MB/s of small objects): the
	// headroom no longer lets the payloads' garbage grow the heap to it.
	assert.Equal(t, uint64(3*MiB), gcheadroom.HeadroomFor(32*MiB, 12*MiB, time.Second))
}

// TestStartTunesAfterCollections checks the whole loop: a collection with a
// small live heap raises GOGC and sets a memory limit below GOMEMLIMIT's,
// and Stop puts the old values back.
func TestStartTunesAfterCollections(t *testing.T) {
	setGC(t)

	assert.Nil(t, gcheadroom.Start(0), "no headroom: no tuner")

	// A millisecond between collections: the 64 MiB of small objects
	// allocated in between earn the whole headroom.
	tuner := gcheadroom.StartTicking(256<<20, time.Millisecond) // far above this test binary's live heap
	require.NotNil(t, tuner)
	defer tuner.Stop()
	// The finalizer runs on the finalizer goroutine after a collection;
	// a few collections make sure one has run it (no timing involved).
	for i := 0; i < 100 && tuner.Percent() == 100; i++ {
		for range 1 << 16 {
			garbage = make([]byte, 1024) // 64 MiB of small objects: requests' garbage
		}
		runtime.GC()
		runtime.Gosched()
	}
	require.Greater(t, tuner.Percent(), 100, "GOGC not raised for a small live heap")
	now := debug.SetGCPercent(tuner.Percent())
	assert.Equal(t, tuner.Percent(), now, "the runtime's GOGC is the tuner's")
	limit := debug.SetMemoryLimit(-1)
	assert.Less(t, limit, int64(1<<40), "a memory limit below GOMEMLIMIT's")
	assert.Greater(t, limit, int64(256<<20), "the limit holds the headroom")

	tuner.Stop()
	assert.Equal(t, 100, debug.SetGCPercent(100), "Stop restores GOGC")
	assert.Equal(t, int64(1<<40), debug.SetMemoryLimit(-1), "Stop restores the memory limit")
	runtime.GC()
	runtime.GC()
	assert.Equal(t, 100, debug.SetGCPercent(100), "no tuning after Stop")
}

// TestStartGivesPayloadsNoHeadroom checks that collections after
// allocations of large objects alone set a memory limit far below the
// headroom: the payloads' garbage gets a quarter of it, not all of it.
func TestStartGivesPayloadsNoHeadroom(t *testing.T) {
	setGC(t)

	const headroom = 1 << 30 // far above this test binary's live heap and stacks
	// A second between collections: the test binary's own small
	// allocations earn next to nothing.
	tuner := gcheadroom.StartTicking(headroom, time.Second)
	require.NotNil(t, tuner)
	defer tuner.Stop()
	limit := func() int64 { l := debug.SetMemoryLimit(-1); return l }
	for i := 0; i < 100 && limit() > headroom/2; i++ {
		for range 64 {
			payload = make([]byte, 1<<20) // 64 MiB of large objects between collections
		}
		runtime.GC()
		runtime.Gosched()
	}
	assert.Less(t, limit(), int64(headroom/2), "payloads' garbage still gets the headroom")
	assert.Greater(t, limit(), int64(headroom/4), "less than the room of a quarter of the headroom")
}

// TestStartKeepsTheHeadroomOverAPause: the first collection after a pause
// in the load, whose interval counts the pause, keeps the headroom the
// load before it earned; a second quiet interval gives it up.
func TestStartKeepsTheHeadroomOverAPause(t *testing.T) {
	setGC(t)

	const headroom = 256 << 20 // far above this test binary's live heap and stacks
	tuner := startClocked(t, headroom, false)
	tuner.collect(t, time.Millisecond, 64) // a busy millisecond earns it all
	assert.Greater(t, memoryLimit(), int64(headroom), "the load's headroom")
	tuner.collect(t, 10*time.Second, 0)
	assert.Greater(t, memoryLimit(), int64(headroom), "the first interval with a pause keeps it")
	tuner.collect(t, 10*time.Second, 0)
	assert.Less(t, memoryLimit(), int64(headroom/2), "a second quiet interval gives it up")
}

// clocked is a tuner on a clock that moves only when the test moves it,
// with a rest watch, when it has one, that looks for rest when the test
// ticks.
type clocked struct {
	*gcheadroom.Tuner
	clock atomic.Int64
	ticks chan time.Time // nil: no rest watch
	pages atomic.Int64   // calls to release the executable's pages
	cpu   atomic.Int64   // the CPU time the tuner reads, moved by the test
}

func startClocked(t *testing.T, headroom uint64, rest bool) *clocked {
	t.Helper()
	c := &clocked{}
	var ticks <-chan time.Time
	if rest {
		c.ticks = make(chan time.Time) // unbuffered: see tick
		ticks = c.ticks
	}
	origin := time.Now()
	c.Tuner = gcheadroom.StartClock(headroom, func() time.Time { return origin.Add(time.Duration(c.clock.Load())) }, ticks,
		func() time.Duration { return time.Duration(c.cpu.Load()) }, func() { c.pages.Add(1) })
	require.NotNil(t, c.Tuner)
	t.Cleanup(c.Stop)
	return c
}

// collect allocates garbageMiB of small objects, moves the clock by
// advance and waits for the tuning of a collection after that.
func (c *clocked) collect(t *testing.T, advance time.Duration, garbageMiB int) {
	t.Helper()
	for range garbageMiB << 10 {
		garbage = make([]byte, 1024)
	}
	c.clock.Add(int64(advance))
	n := c.Tunes()
	for i := 0; i < 100 && c.Tunes() == n; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	require.Greater(t, c.Tunes(), n, "no tuning after a collection")
}

// tick has the rest watch look for rest, and returns once it has: the
// watch takes the next tick only after it has handled the one before.
func (c *clocked) tick() { c.ticks <- time.Now(); c.ticks <- time.Now() }

// memoryLimit returns the runtime's memory limit.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// setGC sets GOGC to 100 and the memory limit to 1 TiB for the test, and
// puts back the values before it at its end.
func setGC(t *testing.T) {
	t.Helper()
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	oldLimit := debug.SetMemoryLimit(1 << 40)
	t.Cleanup(func() { debug.SetMemoryLimit(oldLimit) })
}

// payload and garbage keep the tests' allocations from being optimized
// away.
var payload, garbage []byte

func TestStartWithCollectorOff(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	assert.Nil(t, gcheadroom.Start(32<<20), "GOGC=off: nothing to tune")
}

func TestBaseFor(t *testing.T) {
	const MiB = 1 << 20
	tests := []struct {
		name                                 string
		live, scan, roots, quarter, headroom uint64
		base, want                           int
	}{
		// 2,048 connections under small requests: 26 MiB live, 13 MiB of
		// it scanned, 17 MiB of stacks and globals, 69 MiB of small
		// garbage a quarter second.
		{"a quarter second over GOGC's room: up to twice base", 26 * MiB, 13 * MiB, 17 * MiB, 69 * MiB, 32 * MiB, 100, 200},
		{"a quarter second between: its room, rounded up to 25", 40 * MiB, 39 * MiB, 1 * MiB, 58 * MiB, 32 * MiB, 100, 150},
		{"a quarter second within GOGC's room: base", 40 * MiB, 39 * MiB, 1 * MiB, 30 * MiB, 32 * MiB, 100, 100},
		// A quarter second's garbage twice the live heap, but the live
		// heap mostly payloads: the room is twice what is scanned.
		{"payloads among small allocations: their bytes earn no room", 30 * MiB, 4 * MiB, 2 * MiB, 64 * MiB, 32 * MiB, 100, 100},
		{"within the headroom: base, the headroom is its room", 20 * MiB, 18 * MiB, 2 * MiB, 69 * MiB, 32 * MiB, 100, 100},
		{"at rest: base", 40 * MiB, 39 * MiB, 1 * MiB, 0, 32 * MiB, 100, 100},
		{"a higher base: up to twice it", 40 * MiB, 39 * MiB, 1 * MiB, math.MaxUint64, 32 * MiB, 300, 600},
		{"no live heap: base", 0, 13 * MiB, 17 * MiB, 69 * MiB, 32 * MiB, 100, 100},
		{"GOGC=0: nothing to scale", 26 * MiB, 13 * MiB, 17 * MiB, 69 * MiB, 32 * MiB, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, gcheadroom.BaseFor(tt.live, tt.scan, tt.roots, tt.quarter, tt.headroom, tt.base))
		})
	}
}

func TestQuarterFor(t *testing.T) {
	const MiB = 1 << 20
	assert.Equal(t, uint64(69*MiB), gcheadroom.QuarterFor(276*MiB, time.Second), "a quarter of a second's")
	assert.Equal(t, uint64(69*MiB), gcheadroom.QuarterFor(69*MiB, 250*time.Millisecond), "a quarter second's own")
	assert.Equal(t, uint64(math.MaxUint64), gcheadroom.QuarterFor(276*MiB, 0), "no time elapsed: all there is, as HeadroomFor")
	assert.Equal(t, uint64(276*MiB), gcheadroom.HeadroomFor(1<<40, 276*MiB, 250*time.Millisecond), "HeadroomFor is it, up to the headroom")
}

// TestStartGivesALargeHeapRoomForAQuarterSecond: a live heap over the
// headroom, under a load of small allocations that fills GOGC's room in
// under a quarter second, gets up to twice GOGC's room; quiet again, GOGC's.
func TestStartGivesALargeHeapRoomForAQuarterSecond(t *testing.T) {
	setGC(t)

	const headroom = 8 << 20    // under the live heap below
	live = make([]*byte, 8<<20) // 64 MiB that collections scan
	t.Cleanup(func() { live = nil })
	tuner := startClocked(t, headroom, false)
	tuner.collect(t, time.Millisecond, 64) // 64 MiB of small garbage in a millisecond
	assert.Equal(t, 200, tuner.Percent(), "twice GOGC's room")
	assert.Equal(t, 200, debug.SetGCPercent(200), "the runtime's GOGC is the tuner's")
	tuner.collect(t, 10*time.Second, 0)
	tuner.collect(t, 10*time.Second, 0) // the first quiet interval keeps the load's (as the headroom)
	assert.Equal(t, 100, tuner.Percent(), "quiet: GOGC's own")
}

// live is a live heap the tests hold.
var live []*byte
