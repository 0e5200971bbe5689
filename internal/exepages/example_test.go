package exepages_test

import (
	"log/slog"
	"os"

	"github.com/vigil-mcp/vigil/internal/exepages"
)

// A main that has started up and gone quiet gives back the code it ran
// once (package initialization, flag parsing, set-up).
func ExampleRelease() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if _, err := exepages.Release(); err != nil {
		logger.Debug("executable pages stay resident", "err", err)
	}
}
