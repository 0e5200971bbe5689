package gcheadroom_test

import (
	"runtime"
	"runtime/debug"
	"testing"

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
		{"small live heap: goal is live+headroom", 4 * MiB, 32 * MiB, 100, 800},
		{"rounded up to a multiple of 25", 3 * MiB, 32 * MiB, 100, 1075},
		{"large live heap: base wins", 64 * MiB, 32 * MiB, 100, 100},
		{"at the crossover: base", 32 * MiB, 32 * MiB, 100, 100},
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
				assert.GreaterOrEqual(t, goal, tt.live+tt.headroom, "goal below live+headroom")
			}
		})
	}
}

// TestStartTunesAfterCollections checks the whole loop: a collection with a
// small live heap raises GOGC, and Stop puts the old value back.
func TestStartTunesAfterCollections(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })

	assert.Nil(t, gcheadroom.Start(0), "no headroom: no tuner")

	tuner := gcheadroom.Start(256 << 20) // far above this test binary's live heap
	require.NotNil(t, tuner)
	defer tuner.Stop()
	// The finalizer runs on the finalizer goroutine after a collection;
	// a few collections make sure one has run it (no timing involved).
	for i := 0; i < 100 && tuner.Percent() == 100; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	require.Greater(t, tuner.Percent(), 100, "GOGC not raised for a small live heap")
	now := debug.SetGCPercent(tuner.Percent())
	assert.Equal(t, tuner.Percent(), now, "the runtime's GOGC is the tuner's")

	tuner.Stop()
	assert.Equal(t, 100, debug.SetGCPercent(100), "Stop restores GOGC")
	runtime.GC()
	runtime.GC()
	assert.Equal(t, 100, debug.SetGCPercent(100), "no tuning after Stop")
}

func TestStartWithCollectorOff(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	assert.Nil(t, gcheadroom.Start(32<<20), "GOGC=off: nothing to tune")
}
