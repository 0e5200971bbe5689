package gateway_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
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
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// silentEnv makes the test binary a stdio upstream that never answers.
const silentEnv = "GATEWAY_TEST_SILENT"

// brokenUpstreams are a healthy upstream "ok", "silent", which never
// answers initialize, and "bad", whose command does not exist.
func brokenUpstreams() []gateway.Upstream {
	ok := testUpstream()
	ok.Name = "ok"
	return []gateway.Upstream{
		ok,
		{Name: "silent", Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{silentEnv + "=1"}},
		{Name: "bad", Command: []string{"/nonexistent/mcp-server", "--token", "s3cret"}},
	}
}

// TestBrokenUpstreamsTakeNoneDown: with an upstream that never answers
// and one whose command fails, Mount returns when its ctx is done and the
// healthy upstream's tools are served; each upstream has its own state,
// in Upstreams, Health and mcp_gateway_upstream_state, and no command
// line or secret is in Health's text.
func TestBrokenUpstreamsTakeNoneDown(t *testing.T) {
	testkit.Watchdog(t)
	clock := newClock() // stands still: the backoff left is the whole of it
	reg := prometheus.NewRegistry()
	srv := server.New()
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // Mount waits for nothing
	g, err := gateway.Mount(ctx, srv, gateway.WithClock(gateway.Config{Upstreams: brokenUpstreams(), Registerer: reg, StartTimeout: time.Hour}, clock.Now))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	<-g.Settled(0)
	<-g.Settled(2)

	assert.Equal(t, []gateway.UpstreamStatus{
		{Name: "ok", State: gateway.StateReady, Required: true},
		{Name: "silent", State: gateway.StateStarting, Required: true},
		{Name: "bad", State: gateway.StateFailing, Required: true, RetryIn: time.Second},
	}, statesOf(g.Upstreams()))
	health := g.Health()
	require.Error(t, health)
	assert.Equal(t, "upstream ok: ready (sandbox none)\nupstream silent: starting (sandbox none)\nupstream bad: failing, next start in 1 s (sandbox none)", health.Error())
	for _, secret := range []string{"nonexistent", "s3cret", os.Args[0]} {
		assert.NotContains(t, health.Error(), secret)
	}

	want := map[string]float64{}
	for _, up := range []struct{ name, state string }{{"ok", "ready"}, {"silent", "starting"}, {"bad", "failing"}} {
		for _, st := range []string{"starting", "ready", "failing", "stopped"} {
			v := 0.0
			if st == up.state {
				v = 1
			}
			want["mcp_gateway_upstream_state{state="+st+",upstream="+up.name+"}"] = v
		}
	}
	assert.Equal(t, want, pick(gathered(t, reg), want))

	c := connect(t, srv)
	names := toolNames(c)
	assert.Contains(t, names, "ok_pid")
	assert.False(t, slices.ContainsFunc(names, func(n string) bool { return n[:3] != "ok_" }), "only ok's tools: %v", names)
	assert.NotEmpty(t, c.CallTool("ok_pid", nil).Text())

	require.NoError(t, g.Close())
	assert.Equal(t, gateway.StateStopped, g.Upstreams()[1].State)
}

// TestRequiredUpstreams: Health requires only the upstreams
// Config.Required names, and still names the others' states.
func TestRequiredUpstreams(t *testing.T) {
	testkit.Watchdog(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	srv := server.New()
	g, err := gateway.Mount(ctx, srv, gateway.Config{Upstreams: brokenUpstreams(), Required: []string{"ok"}, StartTimeout: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	<-g.Settled(0)
	require.NoError(t, g.Health(), "ok is ready")
	sts := g.Upstreams()
	require.Len(t, sts, 3)
	assert.True(t, sts[0].Required)
	assert.False(t, sts[1].Required)
	assert.Equal(t, "upstream silent: starting (not required) (sandbox none)", sts[1].String())

	_, err = gateway.Mount(t.Context(), server.New(), gateway.Config{Upstreams: brokenUpstreams(), Required: []string{"nobody"}})
	require.ErrorContains(t, err, `required upstream "nobody" is not one of the upstreams`)
}

// TestStartTimeout: an upstream that never answers initialize fails its
// start at StartTimeout, and Mount returns then with the upstream failing
// (it waited for nothing else).
func TestStartTimeout(t *testing.T) {
	testkit.Watchdog(t)
	ups := brokenUpstreams()[1:2]
	srv, g := mountWith(t, gateway.Config{Upstreams: ups, StartTimeout: 50 * time.Millisecond})
	assert.Equal(t, gateway.StateFailing, g.Upstreams()[0].State)
	assert.Empty(t, srv.ToolNames())
}

// TestLateUpstreamRegistered: an upstream not ready when Mount returns is
// registered once it is, and a client connected meanwhile (to a server
// with a tool of its own: one that serves no tool declares none) is told
// its tools changed.
func TestLateUpstreamRegistered(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	gate := make(chan struct{})
	u.holdNew(gate)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	srv := server.New()
	require.NoError(t, srv.AddTool(server.Tool{Name: "own"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("own"), nil
	}))
	g, err := gateway.Mount(ctx, srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: u.url}}})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	<-u.holding
	c := mcptest.Connect(t, srv)
	assert.Equal(t, []string{"own"}, toolNames(c))
	assert.Equal(t, gateway.StateStarting, g.Upstreams()[0].State)
	require.ErrorContains(t, g.Health(), "upstream a: starting")

	u.hold.Store(nil)
	close(gate)
	for c.RecvRequest().Method != "notifications/tools/list_changed" { // other lists may change first
		continue
	}
	assert.Contains(t, toolNames(c), "hello")
	<-g.Settled(0)
	require.NoError(t, g.Health())
	assert.Equal(t, "hello from a", c.CallTool("hello", nil).Text())
}

// holdingUpstream serves, over SSE, "hello" and "hold", which logs
// "holding" (its stream is open), tells started and waits for its end.
func holdingUpstream(t *testing.T) (ts *httptest.Server, started chan struct{}) {
	t.Helper()
	started = make(chan struct{}, 1)
	srv := server.New()
	require.NoError(t, srv.AddTool(server.Tool{Name: "hello"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	}))
	require.NoError(t, srv.AddTool(server.Tool{Name: "hold"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		server.ClientLogger(ctx).Warn("holding")
		started <- struct{}{}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}))
	h := streamable.New(srv, streamable.WithResponseMode(streamable.ResponseSSE), streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	ts = httptest.NewServer(h)
	t.Cleanup(func() { _, _ = h.Close(), srv.Close(); ts.Close() })
	return ts, started
}

// TestHTTPUpstreamKilledMidCall: an HTTP upstream killed while a call's
// stream is open ends the call at once as upstream_closed (-32603
// "upstream a is gone", as over stdio), naming no URL; the upstream turns
// failing; the calls meanwhile are refused unsent with a retry hint,
// counted not_ready.
func TestHTTPUpstreamKilledMidCall(t *testing.T) {
	testkit.Watchdog(t)
	ts, started := holdingUpstream(t)
	reg := prometheus.NewRegistry()
	srv, g := mountWith(t, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: ts.URL}}, Registerer: reg})
	c := connect(t, srv)
	assert.Equal(t, "hello", c.CallTool("hello", nil).Text())
	c.SendCallTool(10, "hold", nil)
	<-started
	holding(t, c)
	_ = ts.Listener.Close() // as when its process is killed
	ts.CloseClientConnections()
	e := c.RecvError(10)
	assert.Equal(t, int64(protocol.CodeInternal), e.Code)
	assert.Equal(t, "upstream a is gone", e.Message)

	g.AwaitState(0, gateway.StateFailing)
	health := g.Health()
	require.Error(t, health)
	assert.Regexp(t, `^upstream a: failing, next start in \d+ s$`, health.Error())
	assert.NotContains(t, health.Error(), ts.Listener.Addr().String())

	for range 3 {
		_, rpcErr := c.Call("tools/call", map[string]any{"name": "hello"})
		require.NotNil(t, rpcErr)
		assert.Equal(t, int64(protocol.CodeServerBusy), rpcErr.Code)
		assert.Regexp(t, `^upstream a is not ready; try again in \d+ s$`, rpcErr.Message)
		var data struct {
			RetryAfterSeconds int `json:"retryAfterSeconds"`
		}
		require.NoError(t, json.Unmarshal(rpcErr.Data, &data))
		assert.Positive(t, data.RetryAfterSeconds)
	}

	want := map[string]float64{
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=hello,mcp_method_name=tools/call,outcome=ok,upstream=a}":             1,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=hold,mcp_method_name=tools/call,outcome=upstream_closed,upstream=a}": 1,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=hello,mcp_method_name=tools/call,outcome=error,upstream=a}":          0,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=hello,mcp_method_name=tools/call,outcome=not_ready,upstream=a}":      3,
		"mcp_gateway_upstream_state{state=failing,upstream=a}":                                                                  1,
	}
	assert.Equal(t, want, pick(gathered(t, reg), want))
}

// TestUpstreamBackInService: an upstream failing since its start is
// started again after its backoff, registered, and serves.
func TestUpstreamBackInService(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	u.down.Store(true)
	srv, g := mountWith(t, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: u.url}}})
	assert.Equal(t, gateway.StateFailing, g.Upstreams()[0].State)
	u.down.Store(false)
	g.AwaitState(0, gateway.StateReady)
	assert.Equal(t, "hello from a", connect(t, srv).CallTool("hello", nil).Text())
}

// recordLogger returns a logger that sends the text of each warning on
// records, while it has room (16).
func recordLogger() (*slog.Logger, chan string) {
	records := make(chan string, 16)
	return slog.New(recordHandler(records)), records
}

type recordHandler chan string

func (h recordHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	text := r.Message
	r.Attrs(func(a slog.Attr) bool {
		text += " " + a.String()
		return true
	})
	select {
	case h <- text:
	default:
	}
	return nil
}

func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h recordHandler) WithGroup(string) slog.Handler { return h }

// statesOf returns sts without their counts (calls, latency, starts): the
// states alone.
func statesOf(sts []gateway.UpstreamStatus) []gateway.UpstreamStatus {
	out := make([]gateway.UpstreamStatus, len(sts))
	for i, st := range sts {
		out[i] = gateway.UpstreamStatus{Name: st.Name, State: st.State, Required: st.Required, RetryIn: st.RetryIn}
	}
	return out
}

// TestCallWaitsForStartingUpstream: a call of a tool of an upstream that
// has not listed yet waits for its first listing and is then served; one
// of a name of no upstream does not wait; once its start outlasts
// StartTimeout, a call is refused at once (-32000) naming the upstream
// and its state, with a retry hint.
func TestCallWaitsForStartingUpstream(t *testing.T) {
	testkit.Watchdog(t)
	a, b := startUpstream(t, "a"), startUpstream(t, "b")
	gate := make(chan struct{})
	a.holdNew(gate)
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // Mount returns at once: a is still starting
	srv := server.New()
	g, err := gateway.Mount(ctx, srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: a.url}, {Name: "b", URL: b.url}}})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	<-a.holding
	waiting := make(chan string, 4)
	srv.SetToolWait(func(ctx context.Context, name string) error { // Mount's, seen waiting
		waiting <- name
		return g.AwaitTool(ctx, name)
	})
	c := connect(t, srv)
	g.AwaitState(1, gateway.StateReady)

	_, rpcErr := c.Call("tools/call", map[string]any{"name": "c_hello"})
	require.NotNil(t, rpcErr, "a name of no upstream")
	assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code)
	assert.Equal(t, "c_hello", <-waiting)

	c.SendCallTool(10, "a_hello", nil)
	assert.Equal(t, "a_hello", <-waiting) // the call waits for a's listing
	assert.Equal(t, gateway.StateStarting, g.Upstreams()[0].State)
	a.hold.Store(nil)
	close(gate)
	var res *transport.Response
	for res == nil { // the lists that changed are told first
		res, _ = c.Recv().(*transport.Response)
	}
	require.Nil(t, res.Error)
	assert.Contains(t, string(res.Result), "hello from a")
	_, rpcErr = c.Call("tools/call", map[string]any{"name": "a_nothing"})
	require.NotNil(t, rpcErr, "listed: unknown at once")
	assert.Equal(t, int64(protocol.CodeInvalidParams), rpcErr.Code)
	assert.Equal(t, "a_nothing", <-waiting)
}

// TestCallDuringStartOutlastsStartTimeout: a call of a tool of an
// upstream whose first start outlasts StartTimeout is refused (-32000),
// naming the upstream and its state, with a retry hint.
func TestCallDuringStartOutlastsStartTimeout(t *testing.T) {
	testkit.Watchdog(t)
	a := startUpstream(t, "a")
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	a.holdNew(gate)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	srv := server.New()
	g, err := gateway.Mount(ctx, srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: a.url}}, StartTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	c := connect(t, srv)
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "hello"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeServerBusy), rpcErr.Code)
	assert.Regexp(t, `^upstream a is (starting|failing): its tools are not listed yet; try again in \d+ s$`, rpcErr.Message)
	var data struct {
		RetryAfterSeconds int `json:"retryAfterSeconds"`
	}
	require.NoError(t, json.Unmarshal(rpcErr.Data, &data))
	assert.Positive(t, data.RetryAfterSeconds)
}
