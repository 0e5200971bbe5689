package main

import (
	"log/slog"
	"os"
	"strconv"

	"github.com/vigil-mcp/vigil/internal/exepages"
	"github.com/vigil-mcp/vigil/internal/gcheadroom"
)

// pagesEvery is set by the tests alone, with -ldflags "-X
// main.pagesEvery=N": the GC tuner then releases the executable's pages
// every N rest intervals (half seconds) whatever the load, instead of once
// after each 30 s of rest, so that a test sees many releases, at idle and
// under load, in seconds (exepages_e2e_linux_test.go). "" in every build
// that ships.
var pagesEvery string

// ownPagemap is /proc/self/pagemap, opened by main before vigil makes
// itself not dumpable, after which a process not run as root can no
// longer open it; nil: Release opens it.
var ownPagemap *os.File

// openPagemap opens /proc/self/pagemap for ownPagemap, or leaves it nil
// where there is none.
func openPagemap() {
	if f, err := os.Open("/proc/self/pagemap"); err == nil {
		ownPagemap = f
	}
}

// startTuner starts the GC tuner (package gcheadroom) with a headroom of
// headroomMiB, whose releases of the executable's pages at rest are
// logged at debug level with the bytes given back.
func startTuner(headroomMiB int, logger *slog.Logger) *gcheadroom.Tuner {
	every, _ := strconv.Atoi(pagesEvery)
	return gcheadroom.StartReleasing(uint64(headroomMiB)<<20, every, func() {
		var released uint64
		var err error
		if ownPagemap != nil {
			released, err = exepages.ReleaseFrom(ownPagemap)
		} else {
			released, err = exepages.Release()
		}
		if err != nil {
			logger.Debug("executable pages stay resident", "err", err, "released_bytes", released)
			return
		}
		logger.Debug("executable pages released", "released_bytes", released)
	})
}
