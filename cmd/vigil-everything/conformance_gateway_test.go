package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The prefixes of the expected-failures files of the conformance runs
// through the gateway (one per suite): what a 2025 upstream cannot say,
// and, over stdio, what a shared stdio session cannot route
// (docs/gateway.md, "Tested against").
const (
	gatewayStdioBaseline = conformanceDir + "/gateway-stdio-expected-failures"
	gatewayHTTPBaseline  = conformanceDir + "/gateway-http-expected-failures"
)

// TestConformanceThroughGatewayStdio runs both conformance suites, every
// scenario, against vigil -upstream 'e=vigil-everything -stdio': the
// fixtures are vigil-everything's, served through the gateway's stdio
// client. Each scenario gets a gateway of its own: one stdio session
// serves every client, and a call a scenario leaves in flight (a task
// still running, a stateless call waiting for a retry that never comes)
// would leave the next scenario's upstream requests unroutable.
func TestConformanceThroughGatewayStdio(t *testing.T) {
	node := conformanceNode(t)
	vigil := buildVigil(t)
	for _, suite := range []string{"conformance-next", "conformance-stable"} {
		t.Run(suite, func(t *testing.T) {
			out := t.TempDir()
			for _, scenario := range conformanceScenarios(t, node, suite) {
				t.Run(scenario, func(t *testing.T) {
					url := startServing(t, vigil, nil, "-http", "127.0.0.1:0", "-upstream", "e="+everythingBin+" -stdio")
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
					defer cancel()
					cmd := exec.CommandContext(ctx, node, filepath.Join(conformanceDir, "node_modules", suite, "dist", "index.js"),
						"server", "--url", url, "--scenario", scenario, "-o", out,
						"--expected-failures", gatewayStdioBaseline+"-"+suite+".yml")
					cmd.WaitDelay = 5 * time.Second
					if output, err := cmd.CombinedOutput(); err != nil {
						t.Errorf("%s (err %v):\n%s", scenario, err, failures(output))
					}
				})
			}
			passed, failed := checkTotals(t, out)
			t.Logf("%s: %d passed, %d failed", suite, passed, failed)
		})
	}
}

// conformanceScenarios lists the server scenarios of a suite.
func conformanceScenarios(t *testing.T, node, suite string) []string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), node, filepath.Join(conformanceDir, "node_modules", suite, "dist", "index.js"), "list", "--server").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var names []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "  - "); ok {
			names = append(names, strings.Fields(rest)[0])
		}
	}
	require.NotEmpty(t, names, "%s", out)
	return names
}

// checkTotals counts the checks that passed and failed in the results
// the suite wrote under dir (a checks.json per scenario run).
func checkTotals(t *testing.T, dir string) (passed, failed int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var checks []struct{ Status string }
		require.NoError(t, json.Unmarshal(b, &checks), f)
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				passed++
			case "FAILURE":
				failed++
			}
		}
	}
	return passed, failed
}

// TestConformanceThroughGatewayHTTP runs both conformance suites, every
// scenario, against vigil -upstream e=http://127.0.0.1:PORT/mcp in front
// of vigil-everything -http: the gateway's Streamable HTTP client, in the
// 2025 session era.
func TestConformanceThroughGatewayHTTP(t *testing.T) {
	node := conformanceNode(t)
	upstream := strings.Replace(startHTTP(t), "localhost", "127.0.0.1", 1)
	url := startServing(t, buildVigil(t), nil, "-http", "127.0.0.1:0", "-upstream", "e="+upstream)
	runConformanceExpecting(t, node, url, gatewayHTTPBaseline)
}

// buildVigil builds cmd/vigil for the test and returns its path.
func buildVigil(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vigil")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-ldflags", "-X main.version=dev", "-o", bin, "../vigil").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}
