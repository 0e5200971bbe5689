package gateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// mountWith mounts cfg's upstreams on a new server.
func mountWith(t *testing.T, cfg gateway.Config) (*server.Server, *gateway.Gateway) {
	t.Helper()
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	return srv, g
}

// connect returns a new client session of srv.
func connect(t *testing.T, srv *server.Server) *mcptest.Client {
	t.Helper()
	return mcptest.Connect(t, srv)
}

// pidOf returns the process id of the test upstream serving c's calls.
func pidOf(t *testing.T, c *mcptest.Client) int {
	t.Helper()
	pid, err := testkit.HostPID(c.CallTool("pid", nil).Text())
	require.NoError(t, err)
	return pid
}

// holding waits for the log message of a call of "hold": it is in flight
// upstream.
func holding(t *testing.T, c *mcptest.Client) {
	t.Helper()
	n := c.RecvRequest()
	require.Equal(t, "notifications/message", n.Method)
	require.Contains(t, string(n.Params), "holding")
}

// textOf returns the text of a tools/call result.
func textOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var res struct{ Content []struct{ Text string } }
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Len(t, res.Content, 1)
	return res.Content[0].Text
}

// clock is a clock that moves only when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d ahead.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// processEvent is a log record of the gateway about an upstream process:
// its message and the process's pid.
type processEvent struct {
	msg string
	pid int
}

// eventHandler is a log handler that hands each record with a pid to
// events.
type eventHandler struct {
	attrs  []slog.Attr
	events chan processEvent
}

// eventLogger returns a logger that hands each record about an upstream
// process to a channel, read by waitFor.
func eventLogger() (*slog.Logger, chan processEvent) {
	events := make(chan processEvent, 256)
	return slog.New(&eventHandler{events: events}), events
}

func (h *eventHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *eventHandler) Handle(_ context.Context, r slog.Record) error {
	e := processEvent{msg: r.Message}
	find := func(a slog.Attr) bool {
		if a.Key == "pid" {
			e.pid = int(a.Value.Int64())
		}
		return true
	}
	for _, a := range h.attrs {
		find(a)
	}
	r.Attrs(find)
	if e.pid != 0 {
		select {
		case h.events <- e:
		default: // a test reads the ones it waits for
		}
	}
	return nil
}

func (h *eventHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &eventHandler{attrs: append(slices.Clip(h.attrs), attrs...), events: h.events}
}

func (h *eventHandler) WithGroup(string) slog.Handler { return h }

// waitFor waits for the record msg about an upstream process, of pid
// unless pid is 0, and returns its pid.
func waitFor(events chan processEvent, msg string, pid int) int {
	for e := range events {
		if e.msg == msg && (pid == 0 || e.pid == pid) {
			return e.pid
		}
	}
	return 0
}

// waitExit waits until the process pid has exited.
func waitExit(t *testing.T, events chan processEvent, pid int) {
	t.Helper()
	waitFor(events, "upstream process exited", pid)
}

// TestSessionsGetTheirOwnProcess: each downstream session's calls go to
// a process of its own, started at its first call and kept; the end of
// the session ends its process, and the other session's serves on.
func TestSessionsGetTheirOwnProcess(t *testing.T) {
	testkit.Watchdog(t)
	log, exited := eventLogger()
	srv, g := mountWith(t, gateway.Config{Upstreams: []gateway.Upstream{testUpstream()}, Logger: log})
	one, two := connect(t, srv), connect(t, srv)
	starts, _ := g.Counts(0)
	assert.Equal(t, int64(1), starts, "the catalog's only, before any call")

	p1, p2 := pidOf(t, one), pidOf(t, two)
	assert.NotEqual(t, p1, p2)
	assert.Equal(t, p1, pidOf(t, one), "a session keeps its process")
	starts, _ = g.Counts(0)
	assert.Equal(t, int64(3), starts)

	require.NoError(t, one.Close())
	waitExit(t, exited, p1)
	assert.Equal(t, p2, pidOf(t, two))
}

// TestMaxProcessesRefuses: a session whose first call would start one
// process more than MaxProcesses is refused with -32000, and counted; once
// another session ends, it is served.
func TestMaxProcessesRefuses(t *testing.T) {
	testkit.Watchdog(t)
	log, exited := eventLogger()
	reg := prometheus.NewRegistry()
	srv, g := mountWith(t, gateway.Config{Upstreams: []gateway.Upstream{testUpstream()}, Logger: log, MaxProcesses: 2, Registerer: reg})
	one, two, three := connect(t, srv), connect(t, srv), connect(t, srv)
	p1 := pidOf(t, one)
	pidOf(t, two)

	_, rpcErr := three.Call("tools/call", map[string]any{"name": "pid"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeServerBusy), rpcErr.Code)
	assert.Equal(t, "upstream e: its 2 processes all serve other sessions; try again later", rpcErr.Message)
	_, refused := g.Counts(0)
	assert.Equal(t, int64(1), refused)
	assert.InDelta(t, 1, gathered(t, reg)["mcp_gateway_upstream_refused_calls_total{upstream=e}"], 0, "the refusal counted")

	require.NoError(t, one.Close())
	waitExit(t, exited, p1)
	assert.NotEqual(t, p1, pidOf(t, three))
}

// TestDefaultMaxProcesses: by default 32 sessions get a process each,
// and the 33rd is refused, saying so.
func TestDefaultMaxProcesses(t *testing.T) {
	testkit.Watchdog(t)
	srv, g := mountWith(t, gateway.Config{Upstreams: []gateway.Upstream{testUpstream()}})
	pids := map[int]bool{}
	for range 32 {
		pids[pidOf(t, connect(t, srv))] = true
	}
	assert.Len(t, pids, 32)
	_, rpcErr := connect(t, srv).Call("tools/call", map[string]any{"name": "pid"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeServerBusy), rpcErr.Code)
	assert.Equal(t, "upstream e: its 32 processes all serve other sessions; try again later", rpcErr.Message)
	starts, refused := g.Counts(0)
	assert.Equal(t, int64(33), starts, "the catalog's and 32")
	assert.Equal(t, int64(1), refused)
}

// TestIdleSessionReaped: a session's process with no call in flight for
// IdleTimeout is ended; one with a call in flight is not; the next call
// starts a new one.
func TestIdleSessionReaped(t *testing.T) {
	testkit.Watchdog(t)
	clock := newClock()
	log, exited := eventLogger()
	srv, g := mountWith(t, gateway.WithClock(gateway.Config{Upstreams: []gateway.Upstream{testUpstream()}, Logger: log, IdleTimeout: time.Minute}, clock.Now))
	c := connect(t, srv)
	first := pidOf(t, c)

	c.SendCallTool(9, "hold", nil)
	holding(t, c)
	clock.Advance(2 * time.Minute)
	g.ReapIdle()
	assert.Equal(t, "ok", c.CallTool("release", nil).Text())
	assert.Equal(t, "released", textOf(t, c.RecvResult(9)))
	assert.Equal(t, first, pidOf(t, c), "not idle while a call was in flight")

	clock.Advance(59 * time.Second)
	g.ReapIdle()
	assert.Equal(t, first, pidOf(t, c), "not idle for a minute yet")

	clock.Advance(time.Minute)
	g.ReapIdle()
	waitExit(t, exited, first)
	assert.NotEqual(t, first, pidOf(t, c), "a new process serves the next call")
}

// TestCapabilitiesOfTheSession: a downstream session's upstream session
// declares the capabilities of its client that the gateway relays, and
// sampling reaches the client through it.
func TestCapabilitiesOfTheSession(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	srv, _ := mountWith(t, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: u.url}}})
	plain := connect(t, srv)
	sampler := mcptest.Connect(t, srv, mcptest.WithCapabilities(map[string]any{"sampling": map[string]any{}}),
		mcptest.WithRequestHandler(func(context.Context, *transport.Request) (any, error) {
			return map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": "a"}, "model": "m"}, nil
		}))
	u.sampling.Add(1)
	assert.Equal(t, "sampled by m", sampler.CallTool("sample", nil).Text())
	u.sampling.Add(1)
	res := plain.CallTool("sample", nil)
	assert.True(t, res.IsError, "the upstream's own refusal: the session declared no sampling")
	assert.Contains(t, res.Text(), `needs the "sampling" capability`)
}

// TestListingSessionStartedAgain: the session an upstream keeps for
// listing is started again as soon as its process dies, before any call
// needs it, and serves the next call of a shared upstream.
func TestListingSessionStartedAgain(t *testing.T) {
	testkit.Watchdog(t)
	log, events := eventLogger()
	up := testUpstream()
	up.Shared = true
	srv, g := mountWith(t, gateway.Config{Upstreams: []gateway.Upstream{up}, Logger: log})
	c := connect(t, srv)
	first := pidOf(t, c)
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "die"})
	require.NotNil(t, rpcErr)
	second := waitFor(events, "upstream started again", 0)
	assert.NotEqual(t, first, second)
	require.NoError(t, g.Health())
	assert.Equal(t, second, pidOf(t, c))
}
