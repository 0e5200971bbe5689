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

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/stdiopeer"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeStdioEnv) != "" {
		stdiopeer.ServeFake(os.Stdin, os.Stdout)
		return
	}
	goleak.VerifyTestMain(m)
}

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
	// Shedding off: this test shares the machine's cores with the other
	// packages' tests, and a request vigil sheds fails the load generator;
	// what it checks is the report, not the service under overload.
	cmd := exec.CommandContext(t.Context(), goCmd, "run", ".", "-go", goCmd, "-vigil-arg=-overload-target=0",
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

// TestBenchScaleReports runs make bench-scale's three phases tiny (20
// sessions with streams, 2 fan-outs, overload at 2 and 8 clients for
// 300 ms, a 64 KiB echo) and checks that every table is there with its
// figures, that every stream got every fan-out on both servers, that no
// overload request failed, and that the run ends with a PASS or FAIL line
// per acceptance item (which way they go at this size is noise).
func TestBenchScaleReports(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs five binaries")
	}
	goCmd := "go"
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		goCmd = goroot + "/bin/go"
	}
	cmd := exec.CommandContext(t.Context(), goCmd, "run", ".", "-go", goCmd, "-scale",
		"-scale-sessions", "20", "-fanouts", "2", "-scale-settle", "0s", "-scale-round", "300ms",
		"-overload-clients", "2,8", "-payload-bytes", "65536", "-callers-clients", "16,4")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	report := string(out)

	num := `[\d,.]+`
	for _, row := range []string{
		`^files\s+RLIMIT_NOFILE raised to \d+`,
		`^streams\s+vigil is cmd/vigil-everything .*-resumable=false -list-changed-delay 0`,
		`^overload,\s+vigil is cmd/vigil .*-quota-in-flight 0`,
		// streams: floor, vigil, vigil/floor
		`^\s+RSS per session\+stream\s+-?` + num + ` KiB\s+-?` + num + ` KiB\s+(-|-?` + num + `×)$`,
		`^\s+after 2 fan-outs\s+-?` + num + ` KiB\s+-?` + num + ` KiB\s+(-|-?` + num + `×)$`,
		`^\s+fan-out time\s+` + num + ` ms\s+` + num + ` ms\s+` + num + `×\s*$`,
		`^\s+CPU per notified session\s+` + num + ` µs\s+` + num + ` µs\s+(-|` + num + `×)$`,
		`^delivered\s+floor: every stream got every fan-out, once$`,
		`^delivered\s+vigil: every stream got every fan-out, once$`,
		// overload: mode, clients, server, goodput, p99, refused/s, Retry-After, failed, of peak, CPU per answer (server, clients)
		`^\s+honor\s+2\s+floor\s+` + num + `\s+` + num + ` ms\s+\d+\s+\S+\s+0\s+100%\s+` + num + ` µs\s+` + num + ` µs$`,
		`^\s+honor\s+8\s+vigil\s+` + num + `\s+` + num + ` ms\s+\d+\s+\S+\s+0\s+\d+%\s+` + num + ` µs\s+` + num + ` µs$`,
		`^\s+ignore\s+8\s+vigil\s+` + num + `\s+` + num + ` ms\s+\d+\s+\S+\s+0\s+\d+%\s+` + num + ` µs\s+` + num + ` µs$`,
		`^\s+vigil/floor\s+` + num + `×\s+` + num + `×\s*$`,
		// payload: server, calls/s, p99, failed, RSS at start, peak, bound, within
		`^\s+floor\s+` + num + `\s+` + num + ` ms\s+0\s+` + num + ` MiB\s+` + num + ` MiB\s+` + num + ` MiB\s+(true|false)$`,
		`^\s+vigil\s+` + num + `\s+` + num + ` ms\s+0\s+` + num + ` MiB\s+` + num + ` MiB\s+` + num + ` MiB\s+(true|false)$`,
		// callers: caller, clients, goodput, p99, refused/s, refused, failed
		`^\s+heavy@127\.0\.0\.1\s+16\s+` + num + `\s+` + num + ` ms\s+\d+\s+` + num + `%\s+0$`,
		`^\s+light\s+4\s+` + num + `\s+` + num + ` ms\s+\d+\s+` + num + `%\s+0$`,
	} {
		assert.Regexp(t, `(?m)`+row, report)
	}
	assert.NotContains(t, report, "first failure")
	_, summary, ok := strings.Cut(report, "\nacceptance ")
	require.True(t, ok, "no acceptance summary:\n%s", report)
	verdicts := regexp.MustCompile(`(?m)^(PASS|FAIL)  (.*)$`).FindAllStringSubmatch(summary, -1)
	var items []string
	for _, v := range verdicts {
		items = append(items, v[2])
	}
	require.Len(t, items, 12, "%s", summary)
	for i, want := range []string{
		"fan-out to 20 streams: server CPU per notified session",
		"fan-out to 20 streams: time until the last client has it",
		"RSS per session + stream at 20:",
		"RSS per session + stream at 20 after 2 fan-outs:",
		"overload at 8 clients honoring Retry-After: goodput",
		"overload at 8 clients honoring Retry-After: p99 of admitted requests",
		"overload: ",
		"overload at 2 clients: nothing shed",
		"overload at 8 clients ignoring Retry-After: goodput",
		"65,536-byte echo at 8 clients: peak RSS",
		"65,536-byte echo at 8 clients: calls/s",
		"callers: the light caller's refusals",
	} {
		assert.True(t, strings.HasPrefix(items[i], want), "item %d: %q, want %q...", i, items[i], want)
	}
}

func TestVerdictLines(t *testing.T) {
	report := "table\nPASS  a: 1×\n  PASS  indented\nFAIL  b\nFAILED\n"
	assert.Equal(t, []string{"PASS  a: 1×", "FAIL  b"}, verdictLines([]byte(report)))
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

// TestBenchBuildsAsTheDockerfile checks that the benchmarks build what
// deploy/Dockerfile ships: its go build has each of shippedBuild's flags.
func TestBenchBuildsAsTheDockerfile(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/Dockerfile")
	require.NoError(t, err)
	var build string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, "go build ") {
			build = line
		}
	}
	require.NotEmpty(t, build, "deploy/Dockerfile has a go build line")
	assert.Contains(t, build, "CGO_ENABLED=0 ")
	assert.False(t, shippedBuild.cgo, "the Dockerfile builds without cgo")
	for _, arg := range shippedBuild.args() {
		assert.Contains(t, build, strings.Trim(arg, `"`), "deploy/Dockerfile's go build has %s", arg)
	}
	assert.Contains(t, build, `-ldflags "`+shippedBuild.ldflags+" ")
}
