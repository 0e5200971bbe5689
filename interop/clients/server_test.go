package clients

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// server is a shipped server running over HTTP on a loopback port.
type server struct {
	mcp  string // the MCP endpoint, http://127.0.0.1:PORT/mcp
	base string // http://127.0.0.1:PORT, where cmd/vigil serves /metrics and /debug/vigil
}

var urlField = regexp.MustCompile(`url=(http://\S+)`)

// startServer runs bin -http 127.0.0.1:0 with args, waits for the URL it
// logs, and stops it with SIGTERM at cleanup (it must exit 0).
func startServer(t *testing.T, bin string, args ...string) server {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-http", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	urls := make(chan string, 1)
	logs := make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(stderr)
		found := false
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			if m := urlField.FindStringSubmatch(sc.Text()); m != nil && !found && strings.Contains(sc.Text(), "serving MCP") {
				found = true
				urls <- m[1]
			}
		}
		logs <- all.String()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		out := <-logs
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Errorf("%s exited with %v:\n%s", bin, exit, out)
		}
		if t.Failed() {
			t.Logf("%s stderr (last lines):\n%s", bin, lastLines(out, 40))
		}
	})
	select {
	case u := <-urls:
		return server{mcp: u, base: strings.TrimSuffix(u, "/mcp")}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not report its URL", bin)
		return server{}
	}
}

// get returns the body of GET s.base+path.
func (s server) get(t *testing.T, path string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
	return body
}

var cancellationLine = regexp.MustCompile(`^mcp_server_cancellations_total\{cause="([a-z_]+)",mcp_method_name="tools/call"\} (\S+)$`)

// causes returns cmd/vigil's mcp_server_cancellations_total of tools/call,
// by cause, from /metrics.
func (s server) causes(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for line := range strings.SplitSeq(string(s.get(t, "/metrics")), "\n") {
		if m := cancellationLine.FindStringSubmatch(line); m != nil {
			v, err := strconv.ParseFloat(m[2], 64)
			require.NoError(t, err, line)
			out[m[1]] = int(v)
		}
	}
	require.NotEmpty(t, out, "no mcp_server_cancellations_total of tools/call in /metrics")
	return out
}

var rejectedLine = regexp.MustCompile(`^mcp_server_messages_rejected_total\{reason="([a-z_]+)"\} (\S+)$`)

// rejected returns cmd/vigil's mcp_server_messages_rejected_total of
// reason, from /metrics (0 when it has no series yet).
func (s server) rejected(t *testing.T, reason string) int {
	t.Helper()
	for line := range strings.SplitSeq(string(s.get(t, "/metrics")), "\n") {
		if m := rejectedLine.FindStringSubmatch(line); m != nil && m[1] == reason {
			v, err := strconv.ParseFloat(m[2], 64)
			require.NoError(t, err, line)
			return int(v)
		}
	}
	return 0
}

// inFlightRequest is a request of the live page's in-flight list.
type inFlightRequest struct {
	SessionID string `json:"session_id"`
	Direction string `json:"direction"`
	ID        string `json:"id"`
	Method    string `json:"method"`
	Name      string `json:"name"`
}

// sleepsInFlight returns the tools/call sleep requests that the live page
// (/debug/vigil?format=json) lists in flight: their handlers are running.
func (s server) sleepsInFlight(t *testing.T) []inFlightRequest {
	t.Helper()
	var page struct {
		InFlight []inFlightRequest `json:"in_flight"`
	}
	require.NoError(t, json.Unmarshal(s.get(t, "/debug/vigil?format=json"), &page))
	var out []inFlightRequest
	for _, r := range page.InFlight {
		if r.Direction == "incoming" && r.Method == "tools/call" && r.Name == "sleep" {
			out = append(out, r)
		}
	}
	return out
}

// waitFor polls cond every few milliseconds until it holds, and fails the
// test when it does not within d; it returns how long it took.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

// requireCI fails the test under CI=true, where `make clients` installed
// every component, and skips it elsewhere.
func requireCI(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
