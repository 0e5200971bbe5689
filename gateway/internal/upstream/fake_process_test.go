package upstream_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
)

// fakeModeEnv names the fake upstream the test binary plays (runFake).
const fakeModeEnv = "UPSTREAM_TEST_FAKE"

// runFake plays a hostile or telling upstream process:
//
//   - "stubborn" writes a 10,000-byte stderr line and a short one, reads
//     its stdin to the end, and then does not exit, SIGTERM ignored;
//   - "lingering" reads its stdin to the end and does not exit until
//     SIGTERM;
//   - "env" writes its environment on stderr, one variable a line;
//   - "flood" writes 1,000 stderr lines and exits.
//   - "pid" writes its process id on stderr.
func runFake(mode string) {
	switch mode {
	case "pid":
		fmt.Fprintln(os.Stderr, os.Getpid())
	case "lingering":
		fmt.Fprintln(os.Stderr, "started")
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Fprintln(os.Stderr, strings.Repeat("x", 10_000))
		fmt.Fprintln(os.Stderr, "short")
		_, _ = io.Copy(io.Discard, os.Stdin)
		time.Sleep(time.Hour)
	case "flood":
		for i := range 1000 {
			fmt.Fprintln(os.Stderr, "line", i)
		}
	case "env":
		for _, kv := range os.Environ() {
			fmt.Fprintln(os.Stderr, kv)
		}
	}
}

// startFake starts the test binary as the fake upstream "e" in mode.
func startFake(t *testing.T, l *logs, mode string, cfg upstream.ProcessConfig) *upstream.Process {
	t.Helper()
	cfg.Name = "e"
	cfg.Argv = []string{os.Args[0], "-test.run=^$"}
	cfg.Env = append(cfg.Env, fakeModeEnv+"="+mode)
	cfg.Logger = slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := upstream.StartProcess(cfg)
	require.NoError(t, err)
	return p
}

// TestStubbornProcessKilled: a process that exits neither at the end of
// its input nor on the SIGTERM it gets halfway through KillGrace is
// killed once KillGrace is over, and its stderr is logged line by line, a
// long line cut at MaxStderrLine.
func TestStubbornProcessKilled(t *testing.T) {
	watchdog(t, time.Minute)
	var l logs
	p := startFake(t, &l, "stubborn", upstream.ProcessConfig{MaxStderrLine: 1024, KillGrace: 100 * time.Millisecond})
	l.waitFor(`"line":"short"`) // it has started: killed before, it would write nothing
	require.NoError(t, p.Close())
	<-p.Exited()
	assert.Equal(t, []string{strings.Repeat("x", 1024), "short"}, l.stderrLines(t))
	var truncated, termed, killed bool
	for _, r := range l.records(t) {
		truncated = truncated || r["truncated"] == true
		termed = termed || strings.Contains(r["msg"].(string), "terminating it")
		killed = killed || strings.Contains(r["msg"].(string), "killing it")
	}
	assert.True(t, truncated, "the long line is marked truncated")
	assert.True(t, termed, "the SIGTERM is logged")
	assert.True(t, killed, "the kill is logged")
}

// TestLingeringProcessTerminated: a process that does not exit at the
// end of its input but on SIGTERM is sent SIGTERM halfway through
// KillGrace, and not killed.
func TestLingeringProcessTerminated(t *testing.T) {
	watchdog(t, time.Minute)
	var l logs
	p := startFake(t, &l, "lingering", upstream.ProcessConfig{KillGrace: 2 * time.Second})
	l.waitFor(`"line":"started"`)
	start := time.Now()
	require.NoError(t, p.Close())
	assert.Less(t, time.Since(start), 2*time.Second, "it ended on SIGTERM, before KillGrace was over")
	for _, r := range l.records(t) {
		assert.NotContains(t, r["msg"], "killing it")
	}
}

// TestProcessEnvironment: a stdio upstream gets the variables it is
// given and PATH, never the rest of the gateway's environment.
func TestProcessEnvironment(t *testing.T) {
	watchdog(t, time.Minute)
	t.Setenv("VIGIL_TEST_SECRET", "hunter2")
	var l logs
	p := startFake(t, &l, "env", upstream.ProcessConfig{Env: []string{"API_KEY=k1", "PATH=/opt/bin"}})
	<-p.Exited()
	require.NoError(t, p.Close())
	lines := l.stderrLines(t)
	assert.Contains(t, lines, "API_KEY=k1")
	assert.Contains(t, lines, "PATH=/opt/bin", "a given variable overrides an inherited one")
	assert.NotContains(t, strings.Join(lines, "\n"), "hunter2")
}

// TestProcessPid: Pid is the id of the process.
func TestProcessPid(t *testing.T) {
	watchdog(t, time.Minute)
	var l logs
	p := startFake(t, &l, "pid", upstream.ProcessConfig{})
	<-p.Exited()
	require.NoError(t, p.Close())
	assert.Equal(t, []string{strconv.Itoa(p.Pid())}, l.stderrLines(t))
}

func TestStartProcessFails(t *testing.T) {
	_, err := upstream.StartProcess(upstream.ProcessConfig{Name: "e"})
	require.Error(t, err)
	_, err = upstream.StartProcess(upstream.ProcessConfig{Name: "e", Argv: []string{"/nonexistent/upstream"}})
	require.Error(t, err)
}
