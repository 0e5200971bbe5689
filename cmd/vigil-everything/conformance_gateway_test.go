package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// gatewayBaseline is the prefix of the expected-failures files of the
// conformance runs through the gateway (one per suite): what the gateway
// does not translate yet (docs/gateway.md, "Tested against").
const gatewayBaseline = conformanceDir + "/gateway-expected-failures"

// TestConformanceThroughGatewayStdio runs both conformance suites, every
// scenario, against vigil -upstream 'e=vigil-everything -stdio': the
// fixtures are vigil-everything's, served through the gateway's stdio
// client.
func TestConformanceThroughGatewayStdio(t *testing.T) {
	node := conformanceNode(t)
	url := startServing(t, buildVigil(t), nil, "-http", "127.0.0.1:0", "-upstream", "e="+everythingBin+" -stdio")
	runConformanceExpecting(t, node, url, gatewayBaseline)
}

// TestConformanceThroughGatewayHTTP runs both conformance suites, every
// scenario, against vigil -upstream e=http://127.0.0.1:PORT/mcp in front
// of vigil-everything -http: the gateway's Streamable HTTP client, in the
// 2025 session era.
func TestConformanceThroughGatewayHTTP(t *testing.T) {
	node := conformanceNode(t)
	upstream := strings.Replace(startHTTP(t), "localhost", "127.0.0.1", 1)
	url := startServing(t, buildVigil(t), nil, "-http", "127.0.0.1:0", "-upstream", "e="+upstream)
	runConformanceExpecting(t, node, url, gatewayBaseline)
}

// buildVigil builds cmd/vigil for the test and returns its path.
func buildVigil(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "vigil")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../vigil").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}
