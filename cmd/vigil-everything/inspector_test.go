package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/inspectortest"
)

// The MCP Inspector's SEP-2640 checks pass on the sample skills in both
// protocol eras, digests required; the unlisted dynamic skill is found by
// skills/get and, having no digests, fails --require-digests (exit 9): the
// check does look at what it is given.
func TestInspectorSkills(t *testing.T) {
	cli := inspectortest.Require(t)
	url := startHTTP(t)
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			r := cli.Run(t, url, "--protocol-era", era, "--method", "skills/list", "--verify", "--require-digests")
			assert.Equal(t, 0, r.Code, "%s", r.Output())
			assert.Contains(t, r.Output(), "Verified 2 skills and 6 files: no conformance errors.")
			r = cli.Run(t, url, "--protocol-era", era, "--method", "skills/get",
				"--uri", "skill://pdf-processing/SKILL.md", "--verify", "--require-digests")
			assert.Equal(t, 0, r.Code, "%s", r.Output())
			assert.Contains(t, r.Output(), "Verified 1 skill and 3 files: no conformance errors.")

			r = cli.Run(t, url, "--protocol-era", era, "--method", "skills/get", "--uri", dailyReportURI, "--verify")
			assert.Equal(t, 0, r.Code, "a dynamic skill is unverifiable, not wrong:\n%s", r.Output())
			r = cli.Run(t, url, "--protocol-era", era, "--method", "skills/get", "--uri", dailyReportURI, "--verify", "--require-digests")
			assert.Equal(t, 9, r.Code, "%s", r.Output())
		})
	}
}

// TestInspectorCLI runs the MCP Inspector's CLI against one running
// vigil-everything, in both protocol eras: tools/list --strict reports no
// error-severity portability problem (exit 0), and a short --load run of a
// tool has every call succeed.
func TestInspectorCLI(t *testing.T) {
	cli := inspectortest.Require(t)
	url := startHTTP(t)
	inspect := func(t *testing.T, args ...string) (stdout, stderr string) {
		t.Helper()
		r := cli.Run(t, url, args...)
		require.Equal(t, 0, r.Code, "mcp-inspector %s\n%s", strings.Join(args, " "), r.Output())
		return r.Stdout, r.Stderr
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
