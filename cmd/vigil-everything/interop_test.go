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
	node := requireInteropPrereqs(t)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	client := exec.CommandContext(ctx, node, "everything-client.mjs", everythingBin)
	client.Dir = interopDir
	// If the client is killed, don't wait forever for a grandchild (the
	// server) that still holds the output pipe open.
	client.WaitDelay = 5 * time.Second
	out, err := client.CombinedOutput()
	t.Logf("TypeScript client output:\n%s", out)
	require.NoError(t, ctx.Err(), "TypeScript client timed out:\n%s", out)
	require.NoError(t, err, "TypeScript client failed:\n%s", out)
}

// requireInteropPrereqs returns the path of node. If node or the harness's
// node_modules are missing it skips the test, or fails it when running in CI
// (CI=true), where `make test` is expected to have installed them.
func requireInteropPrereqs(t *testing.T) string {
	t.Helper()

	missing := func(reason string) {
		t.Helper()
		msg := reason + "; run `make test` (it runs `npm ci --prefix cmd/vigil/testdata/interop`)" +
			" to install the TypeScript SDK interop harness"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}

	_, err = os.Stat(filepath.Join(interopDir, "node_modules"))
	if errors.Is(err, os.ErrNotExist) {
		missing(interopDir + "/node_modules is missing")
	}
	require.NoError(t, err)

	return node
}
