package upstream_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the test binary as a fake upstream process when
// fakeModeEnv names a mode (see runFake), else the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeModeEnv); mode != "" {
		runFake(mode)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if everything.path != "" {
			_ = os.RemoveAll(filepath.Dir(everything.path))
		}
		os.Exit(code)
	}))
}
