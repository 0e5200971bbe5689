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

// inspectorDir holds the MCP Inspector (package.json, package-lock.json,
// pinned); `make test` installs its node_modules. It runs on the Node 22
// of the conformance step (the Inspector needs Node >= 22.19).
const inspectorDir = "testdata/inspector"

// TestInspectorCLI runs the MCP Inspector's CLI against one running
// vigil-everything, in both protocol eras: tools/list --strict reports no
// error-severity portability problem (exit 0), and a short --load run of a
// tool has every call succeed.
func TestInspectorCLI(t *testing.T) {
	node := conformanceNode(t)
	cli := filepath.Join(inspectorDir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	if _, err := os.Stat(cli); errors.Is(err, os.ErrNotExist) {
		msg := "the MCP Inspector is not installed: run `make test` (npm ci --prefix cmd/vigil-everything/" + inspectorDir + ")"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
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
