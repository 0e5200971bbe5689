package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit/hostiletest"
	"github.com/vigil-mcp/vigil/internal/testkit/routingtest"
	"github.com/vigil-mcp/vigil/internal/testkit/stalltest"
)

// vigilBin is the vigil binary built once for the tests that spawn it.
var vigilBin string

func TestMain(m *testing.M) {
	gateway.SandboxMain() // the launcher of an in-process gateway's sandboxed upstreams, when this is one
	if os.Getenv(stackProbe) != "" {
		os.Exit(m.Run()) // a probe re-run: no binary to build
	}
	if os.Getenv(routingUpstreamEnv) != "" {
		// The routing repro's upstream: it asks a cancelled call's question
		// 1 s after the cancel, since vigil, a process of its own, cannot
		// say when the next caller's call waits its turn.
		os.Exit(routingtest.Upstream(time.Second))
	}
	if os.Getenv(escapeUpstreamEnv) != "" {
		os.Exit(escapeUpstream()) // the sandbox's hostile upstream (sandbox_escape_e2e_linux_test.go)
	}
	if os.Getenv(stallUpstreamEnv) != "" {
		os.Exit(stalltest.Upstream()) // the stall repro's upstream (gateway_stall_e2e_test.go)
	}
	if os.Getenv(hostileUpstreamEnv) != "" {
		os.Exit(hostiletest.Upstream()) // the upstream bytes' hostile upstream (gateway_bytes_e2e_test.go)
	}
	if delay := os.Getenv(slowUpstreamEnv); delay != "" {
		os.Exit(slowUpstream(delay)) // the slow start's upstream (gateway_slow_start_e2e_test.go)
	}
	if dir := os.Getenv(teeDir); dir != "" {
		os.Exit(runTee(dir, os.Args[1:])) // an upstream's recording wrapper (gateway_everything_test.go)
	}
	dir, err := os.MkdirTemp("", "vigil-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	vigilBin = filepath.Join(dir, "vigil")
	// Version dev, whatever the go command would stamp from the checkout:
	// the same answers, byte for byte, on every machine.
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.version=dev", "-o", vigilBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { _ = os.RemoveAll(dir) }))
}

// missingComponent stops a test whose real component (a browser, a
// provider, Prometheus...) is not installed: it is skipped on a developer's
// machine, and fails under CI=true, where a missing component is a failure.
func missingComponent(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
