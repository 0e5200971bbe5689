package upstream_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/sandbox"
)

// TestMain runs the test binary as a fake upstream process when
// fakeModeEnv names a mode (see runFake), else the tests.
func TestMain(m *testing.M) {
	sandbox.Main() // the launcher of BenchmarkStartProcess's sandboxes, when this is one
	if mode := os.Getenv(fakeModeEnv); mode != "" {
		runFake(mode)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		everything.Remove()
		os.Exit(code)
	}))
}
