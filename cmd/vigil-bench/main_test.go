package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestBenchServiceReports runs the service benchmark as make bench-service
// does, for two short rounds, and checks that it builds and starts the
// real binaries and reports every figure the issue asks for, per workload,
// and that vigil recorded every request of the load.
func TestBenchServiceReports(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three binaries")
	}
	goCmd := "go"
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		goCmd = goroot + "/bin/go"
	}
	cmd := exec.CommandContext(t.Context(), goCmd, "run", ".", "-go", goCmd,
		"-rounds", "2", "-round", "200ms", "-warmup", "100ms", "-clients", "4", "-sessions", "2")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	report := string(out)

	for _, title := range []string{"2025-06-18 sessions:", "2026-07-28 stateless:"} {
		i := strings.Index(report, title)
		require.GreaterOrEqual(t, i, 0, "no %q section:\n%s", title, report)
		section := report[i:]
		for _, row := range []*regexp.Regexp{
			// server, req/s, p50, p99, CPU/req, load CPU/req, requests, and each round's req/s.
			regexp.MustCompile(`(?m)^\s+floor\s+[\d,]+\s+[\d.]+ ms\s+[\d.]+ ms\s+[\d.]+ µs\s+[\d.]+ µs\s+[\d,]+\s+[\d,]+\s+[\d,]+\s*$`),
			regexp.MustCompile(`(?m)^\s+vigil\s+[\d,]+\s+[\d.]+ ms\s+[\d.]+ ms\s+[\d.]+ µs\s+[\d.]+ µs\s+[\d,]+\s+[\d,]+\s+[\d,]+\s*$`),
			regexp.MustCompile(`(?m)^\s+vigil/floor\s+[\d.]+×\s+[\d.]+×\s+[\d.]+×\s+[\d.]+×\s+[\d.]+×\s*$`),
			regexp.MustCompile(`(?m)^\s+paired\s+[\d.]+×\s+median of the 2 round ratios`),
			regexp.MustCompile(`(?m)^steal\s+[\d.]+% of the CPUs' time in floor's rounds`),
		} {
			assert.Regexp(t, row, section, "in %s", title)
		}
	}
	assert.Regexp(t, `(?m)^recorded\s+metrics [\d,]+ requests finished; log [\d,]+ request lines \+ 0 dropped; ring \d+ traces: every request recorded$`, report)
}

func TestCachegrindTotal(t *testing.T) {
	summary := "==123== I   refs:      58,205,113\n==123== I1  misses:     5,816,672\n==123== Mispred rate:  1.2%\n"
	v, ok := cachegrindTotal(summary, "I1  misses")
	require.True(t, ok)
	assert.Equal(t, int64(5816672), v)
	v, ok = cachegrindTotal(summary, "I   refs")
	require.True(t, ok)
	assert.Equal(t, int64(58205113), v)
	_, ok = cachegrindTotal(summary, "D1  misses")
	assert.False(t, ok)
}

func TestEventReaderAndJSONMember(t *testing.T) {
	r := newEventReader(strings.NewReader("id: 1\ndata: {\"a\":\ndata: 1}\n\n: ping\n\nevent: x\ndata: [2]\n\n"))
	d, err := r.next()
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":1}`, string(d))
	d, err = r.next()
	require.NoError(t, err)
	assert.Equal(t, "[2]", string(d), "an event without data is skipped")
	_, err = r.next()
	require.Error(t, err)

	assert.Equal(t, `"x"`, jsonMember([]byte(`{"id":"x","n":2}`), "id"))
	assert.Empty(t, jsonMember([]byte(`{"id":"x"}`), "n"))
	assert.Empty(t, jsonMember([]byte(`[1]`), "id"))
}
