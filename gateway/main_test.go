package gateway_test

import (
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit/hostiletest"
	"github.com/vigil-mcp/vigil/internal/testkit/routingtest"
	"github.com/vigil-mcp/vigil/internal/testkit/stalltest"
)

// TestMain runs the test binary as a stdio upstream when upstreamEnv is
// set (see runUpstream), as a hostile one when hostileEnv is (see
// hostiletest.Upstream), as one that never answers when silentEnv is (it reads its
// input to its end), as the routing repro's when routingEnv is (see
// routingtest.Upstream), as one that stops reading when stallEnv is (see
// stalltest.Upstream), as one whose tools keep saying they changed when
// stormEnv is (see runStorm), as one that asks for roots at start when
// fidelityEnv is (see runFidelity), as one with a watched resource when
// watchedEnv is (see runWatched), as one slow to list its tools when
// slowListEnv is (see runSlowLister), as one that answers what a server
// must not when forgerEnv is (see runForger), else the tests.
func TestMain(m *testing.M) {
	gateway.SandboxMain() // the launcher of the sandboxed upstreams, when this is one
	if os.Getenv(silentEnv) != "" {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if os.Getenv(upstreamEnv) != "" {
		os.Exit(runUpstream())
	}
	if os.Getenv(hostileEnv) != "" {
		os.Exit(hostiletest.Upstream())
	}
	if os.Getenv(fidelityEnv) != "" {
		os.Exit(runFidelity())
	}
	if os.Getenv(routingEnv) != "" {
		os.Exit(routingtest.Upstream(0))
	}
	if os.Getenv(stallEnv) != "" {
		os.Exit(stalltest.Upstream())
	}
	if os.Getenv(stormEnv) != "" {
		os.Exit(runStorm())
	}
	if os.Getenv(slowListEnv) != "" {
		os.Exit(runSlowLister())
	}
	if os.Getenv(watchedEnv) != "" {
		os.Exit(runWatched())
	}
	if os.Getenv(forgerEnv) != "" {
		os.Exit(runForger())
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		everything.Remove()
		os.Exit(code)
	}))
}
