// Package restpages starts vigil's GC tuner (package gcheadroom) with its
// releases of the executable's pages at rest logged ([Start]). Only
// cmd/vigil imports it.
package restpages

import (
	"log/slog"
	"os"

	"github.com/vigil-mcp/vigil/internal/exepages"
	"github.com/vigil-mcp/vigil/internal/gcheadroom"
)

// Start starts the GC tuner with a headroom of headroomMiB, releasing the
// executable's pages once after each rest, or every `every` rest
// intervals whatever the load when every is positive (the tests'), read
// from pagemap when not nil (see exepages.ReleaseFrom); each release is
// logged at debug level with the bytes given back.
func Start(headroomMiB, every int, pagemap *os.File, logger *slog.Logger) *gcheadroom.Tuner {
	return gcheadroom.StartReleasing(uint64(headroomMiB)<<20, every, func() {
		var released uint64
		var err error
		if pagemap != nil {
			released, err = exepages.ReleaseFrom(pagemap)
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
