package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// interopDir holds the TypeScript SDK harness (package.json,
// package-lock.json and everything-client.mjs), shared with cmd/vigil. Its
// node_modules are installed by `make test`.
const interopDir = "../vigil/testdata/interop"

// TestInteropTypeScriptEverything drives the vigil-everything binary (built
// by TestMain) over stdio with the official TypeScript MCP SDK client: tools
// of every content type, structured output and a validation failure,
// resources with a subscription, prompts, completion, logging levels,
// progress, and sampling, elicitation and roots round trips. The script
// asserts every result exactly.
func TestInteropTypeScriptEverything(t *testing.T) {
	node := requireNodeHarness(t, interopDir)
	runNodeHarness(t, node, interopDir, time.Minute, "everything-client.mjs", everythingBin)
}

// requireNodeHarness returns the path of node. If node or the harness's
// node_modules in dir are missing it skips the test, or fails it when
// running in CI (CI=true), where `make test` is expected to have installed
// them.
func requireNodeHarness(t *testing.T, dir string) string {
	t.Helper()
	testkit.External(t, "node and the npm harness in "+dir)
	missing := func(reason string) {
		t.Helper()
		msg := reason + "; run `make test` (it runs `npm ci --prefix " + filepath.Join("cmd/vigil-everything", dir) + "`)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	_, err = os.Stat(filepath.Join(dir, "node_modules", ".installed"))
	if errors.Is(err, os.ErrNotExist) {
		missing(dir + "/node_modules is not installed")
	}
	require.NoError(t, err)
	return node
}

// runNodeHarness runs node with args in dir, within timeout, logs its
// output, and fails the test if it fails.
func runNodeHarness(t *testing.T, node, dir string, timeout time.Duration, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	client := exec.CommandContext(ctx, node, args...)
	client.Dir = dir
	// If the client is killed, don't wait forever for a grandchild (the
	// stdio server) that still holds the output pipe open.
	client.WaitDelay = 5 * time.Second
	out, err := client.CombinedOutput()
	t.Logf("%s output:\n%s", args[0], out)
	require.NoError(t, ctx.Err(), "%s timed out", args[0])
	require.NoError(t, err, "%s failed", args[0])
}
