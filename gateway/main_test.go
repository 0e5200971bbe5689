package gateway_test

import (
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/testkit/routingtest"
)

// TestMain runs the test binary as a stdio upstream when upstreamEnv is
// set (see runUpstream), as a hostile one when hostileEnv is (see
// runHostile), as one that never answers when silentEnv is (it reads its
// input to its end), as the routing repro's when routingEnv is (see
// routingtest.Upstream), as one that asks for roots at start when
// fidelityEnv is (see runFidelity), else the tests.
func TestMain(m *testing.M) {
	if os.Getenv(silentEnv) != "" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if os.Getenv(upstreamEnv) != "" {
		os.Exit(runUpstream())
	}
	if os.Getenv(hostileEnv) != "" {
		os.Exit(runHostile())
	}
	if os.Getenv(fidelityEnv) != "" {
		os.Exit(runFidelity())
	}
	if os.Getenv(routingEnv) != "" {
		os.Exit(routingtest.Upstream(0))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		everything.Remove()
		os.Exit(code)
	}))
}
