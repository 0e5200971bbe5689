package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/transport"
)

// everything is cmd/vigil-everything, built once for the tests that run
// it as an upstream.
var everything = testkit.NewBinary("github.com/vigil-mcp/vigil/cmd/vigil-everything")

// everythingBinary builds cmd/vigil-everything and returns its path.
func everythingBinary(t *testing.T) string { return everything.Path(t) }

// logs collects what a logger writes, as JSON lines.
type logs struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written *sync.Cond // on mu: broadcast by each Write; made by the first use
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.written != nil {
		l.written.Broadcast()
	}
	return l.buf.Write(p)
}

// waitFor waits until a record holds text.
func (l *logs) waitFor(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.written == nil {
		l.written = sync.NewCond(&l.mu)
	}
	for !strings.Contains(l.buf.String(), text) {
		l.written.Wait()
	}
}

// records returns the records logged so far.
func (l *logs) records(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(l.buf.String()) {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		out = append(out, r)
	}
	return out
}

// stderrLines returns the stderr lines of the upstream logged so far.
func (l *logs) stderrLines(t *testing.T) []string {
	t.Helper()
	var lines []string
	for _, r := range l.records(t) {
		if r["msg"] == "upstream stderr" {
			assert.Equal(t, "e", r["upstream"], "every line names its upstream")
			lines = append(lines, r["line"].(string))
		}
	}
	return lines
}

// watchdog fails the test if it runs longer than d: the tests with real
// processes cannot use synctest.
func watchdog(t *testing.T, d time.Duration) {
	t.Helper()
	timer := time.AfterFunc(d, func() { panic(t.Name() + " took longer than " + d.String()) })
	t.Cleanup(func() { timer.Stop() })
}

// startEverything starts vigil-everything -stdio as upstream "e" and
// opens a session on it that answers sampling with onRequest.
func startEverything(t *testing.T, l *logs, onRequest func(context.Context, *transport.Request) (json.RawMessage, error)) (*upstream.Process, *upstream.Session) {
	t.Helper()
	logger := slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := upstream.StartProcess(upstream.ProcessConfig{
		Name:   "e",
		Argv:   []string{everythingBinary(t), "-stdio", "-log-level", "debug"},
		Logger: logger,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	s, err := upstream.Open(t.Context(), p.Conn(), upstream.Config{
		Name: "e", Logger: logger, Capabilities: json.RawMessage(`{"sampling":{}}`), OnRequest: onRequest,
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return p, s
}

// text returns the text of the first content block of a tools/call result.
func text(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
	}
	require.NoError(t, json.Unmarshal(raw, &r))
	require.NotEmpty(t, r.Content, "%s", raw)
	return r.Content[0].Text
}

// names returns the "name" member of each item.
func names(t *testing.T, items []json.RawMessage) []string {
	t.Helper()
	var out []string
	for _, it := range items {
		var v struct{ Name string }
		require.NoError(t, json.Unmarshal(it, &v))
		out = append(out, v.Name)
	}
	return out
}

// TestEverythingOverStdio runs the session against vigil-everything
// -stdio: lists, a call, a call with progress, a call that samples the
// client, and its stderr logged line by line under its name.
func TestEverythingOverStdio(t *testing.T) {
	watchdog(t, 5*time.Minute) // the first build is slow on a busy machine
	var l logs
	sampled := make(chan string, 1)
	p, s := startEverything(t, &l, func(_ context.Context, req *transport.Request) (json.RawMessage, error) {
		sampled <- req.Method
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"hi there"},"model":"m"}`), nil
	})
	assert.Equal(t, protocol20251125, s.Initialized().ProtocolVersion)

	tools, err := s.List(t.Context(), "tools/list", "tools", 1000)
	require.NoError(t, err)
	assert.Subset(t, names(t, tools), []string{"test_simple_text", "test_tool_with_progress", "test_sampling"})
	for method, field := range map[string]string{"resources/list": "resources", "resources/templates/list": "resourceTemplates", "prompts/list": "prompts"} {
		items, err := s.List(t.Context(), method, field, 1000)
		require.NoError(t, err, method)
		assert.NotEmpty(t, items, method)
	}

	raw, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"test_simple_text"}`), nil)
	require.NoError(t, err)
	assert.NotEmpty(t, text(t, raw))

	var progress []float64
	raw, err = s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"test_tool_with_progress"}`), progressNotes(func(p json.RawMessage) {
		var v struct{ Progress float64 }
		require.NoError(t, json.Unmarshal(p, &v))
		progress = append(progress, v.Progress)
	}))
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 50, 100}, progress)
	assert.NotEqual(t, "0", text(t, raw), "the upstream saw the session's progress token")

	raw, err = s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"test_sampling","arguments":{"prompt":"hello"}}`), nil)
	require.NoError(t, err)
	assert.Equal(t, "sampling/createMessage", <-sampled)
	assert.Equal(t, "LLM response: hi there", text(t, raw))

	require.NoError(t, s.Close())
	require.NoError(t, p.Close())
	assert.NotEmpty(t, l.stderrLines(t), "vigil-everything logs at debug on stderr")
}

// protocol20251125 is the version vigil-everything answers with.
const protocol20251125 = "2025-11-25"

// TestEverythingCancelled: a caller's cancel ends its call at once and
// reaches vigil-everything as notifications/cancelled (which it logs
// dropping the answer of), and the session serves the next call.
func TestEverythingCancelled(t *testing.T) {
	watchdog(t, 5*time.Minute)
	var l logs
	p, s := startEverything(t, &l, nil)
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("downstream went away")
	_, err := s.Call(ctx, "tools/call", json.RawMessage(`{"name":"test_tool_with_progress"}`), progressNotes(func(json.RawMessage) {
		cancel(cause) // at its first progress, the call is surely running
	}))
	require.ErrorIs(t, err, cause)

	raw, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"test_simple_text"}`), nil)
	require.NoError(t, err)
	assert.NotEmpty(t, text(t, raw))

	// The cancel is written in the background; Close would abort a write
	// not yet made, so wait for vigil-everything to log the drop.
	l.waitFor("reason=cancelled")
	require.NoError(t, s.Close())
	require.NoError(t, p.Close()) // all of its stderr is logged
	found := false
	for _, line := range l.stderrLines(t) {
		found = found || strings.Contains(line, `msg="response dropped"`) && strings.Contains(line, "method=tools/call") && strings.Contains(line, "reason=cancelled")
	}
	assert.True(t, found, "vigil-everything got the cancel: %q", l.stderrLines(t))
}

// TestEverythingKilledMidCall: killing the upstream while a call runs
// answers the call at once with ErrGone, and ends the session.
func TestEverythingKilledMidCall(t *testing.T) {
	watchdog(t, 5*time.Minute)
	var l logs
	p, s := startEverything(t, &l, nil)
	_, err := s.Call(t.Context(), "tools/call", json.RawMessage(`{"name":"test_tool_with_progress"}`), progressNotes(func(json.RawMessage) {
		upstream.KillProcess(p)
	}))
	require.ErrorIs(t, err, upstream.ErrGone)
	<-p.Exited()
	<-s.Done()
	_, err = s.Call(t.Context(), "tools/list", nil, nil)
	require.ErrorIs(t, err, upstream.ErrGone)
}
