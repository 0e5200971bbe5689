package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// shBlock is a fenced shell block of a markdown page.
var shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```")

// TestDocsHTTPWalkthrough runs the curl walkthrough of docs/http.md, its
// shell blocks in order as a reader pastes them, against vigil (its URL
// moved to a free port), and checks that each answer the page shows in a
// comment is the answer given: the 2025 session's echo and its DELETE's
// 204, and in the 2026-07-28 era server/discover, the echo, and the
// countdown's progress then result on one SSE stream.
func TestDocsHTTPWalkthrough(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl:", err)
	}
	page, err := os.ReadFile("../../docs/http.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(page), "\n## A walkthrough with curl\n")
	require.True(t, ok, `docs/http.md has no "## A walkthrough with curl"`)
	section, _, _ = strings.Cut(section, "\n## ")
	var script strings.Builder
	script.WriteString("set -eu\n")
	for _, m := range shBlock.FindAllStringSubmatch(section, -1) {
		script.WriteString(m[1])
	}
	base := runInProcess(t)
	src := strings.ReplaceAll(script.String(), "http://127.0.0.1:8080", base)
	require.NotEqual(t, script.String(), src, "the walkthrough does not speak to http://127.0.0.1:8080")

	cmd := exec.CommandContext(t.Context(), "bash", "-c", src)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	got := string(out)
	t.Logf("the walkthrough printed:\n%s", got)
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		"\n204\n",
		`"supportedVersions":["2026-07-28","2025-11-25"`,
		`"content":[{"type":"text","text":"hi"}],"resultType":"complete"}}`,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1,\"total\":2,\"message\":\"1 left\"}}",
	} {
		require.Contains(t, got, want)
	}
	last := got[strings.LastIndex(got, "data: "):]
	require.Contains(t, last, `"id":3`, "the countdown's result is the stream's last event")
	require.Contains(t, last, `"text":"liftoff"`)
}
