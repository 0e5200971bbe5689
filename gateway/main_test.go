package gateway_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the test binary as a stdio upstream when upstreamEnv is
// set (see runUpstream), as a hostile one when hostileEnv is (see
// runHostile), else the tests.
func TestMain(m *testing.M) {
	if os.Getenv(upstreamEnv) != "" {
		os.Exit(runUpstream())
	}
	if os.Getenv(hostileEnv) != "" {
		os.Exit(runHostile())
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		everything.Remove()
		os.Exit(code)
	}))
}
