package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// upstreamEnv makes the test binary a stdio upstream (runUpstream).
const upstreamEnv = "GATEWAY_TEST_UPSTREAM"

// runUpstream serves, on standard input and output:
//
//   - "pid": answers the process id;
//   - "raw": answers rawResult as it is;
//   - "die": exits with status 3 in the middle of the call;
//   - "hold": logs a warning "holding", then waits for a call of
//     "release" (or its cancel), and answers "released";
//   - "pair": waits until two calls of it are in flight in the process,
//     then answers its arguments and the process id;
//
// and returns the exit status.
func runUpstream() int {
	pid := testkit.ProcessID(os.Getpid()) // its pid in the sandbox is its namespace's
	release := make(chan struct{})
	var pair sync.WaitGroup
	pair.Add(2)
	srv := server.New()
	_ = srv.AddTool(server.Tool{Name: "pid"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text(pid), nil
	})
	_ = srv.AddTool(server.Tool{Name: "raw"}, rawTool)
	_ = srv.AddTool(server.Tool{Name: "fail"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		res := server.Text("failed on purpose")
		res.IsError = true
		return res, nil
	})
	_ = srv.AddTool(server.Tool{Name: "die"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		os.Exit(3)
		return nil, nil
	})
	_ = srv.AddTool(server.Tool{Name: "hold"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		server.ClientLogger(ctx).Warn("holding")
		select {
		case <-release:
			return server.Text("released"), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	_ = srv.AddTool(server.Tool{Name: "release"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		select {
		case release <- struct{}{}:
			return server.Text("ok"), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	_ = srv.AddTool(server.Tool{Name: "pair"}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		pair.Done()
		pair.Wait()
		return server.Text(string(req.Arguments) + " " + pid), nil
	})
	var conn *stdio.Conn
	if os.Getenv(noPingEnv) != "" {
		conn = stdio.New(withoutFirstLine(os.Stdin), os.Stdout)
	} else {
		conn = stdio.Std() // not before: it makes standard input non-blocking
	}
	if err := srv.Serve(context.Background(), conn); err != nil {
		return 1
	}
	return 0
}

// noPingEnv makes runUpstream ignore a ping that comes first, as an
// upstream that does not answer a ping before initialize.
const noPingEnv = "GATEWAY_TEST_NO_PING"

// withoutFirstLine returns r without its first line when that is a ping.
func withoutFirstLine(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	line, _ := br.ReadBytes('\n')
	if bytes.Contains(line, []byte(`"method":"ping"`)) {
		return br
	}
	return io.MultiReader(bytes.NewReader(line), br)
}

// testUpstream is the test binary as the stdio upstream "e".
func testUpstream() gateway.Upstream {
	return gateway.Upstream{Name: "e", Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{upstreamEnv + "=1"}}
}

// TestStdioUpstreamDiesMidCall: a stdio upstream that dies in the middle
// of a call answers that call at once with an error naming the upstream;
// the next call starts a new process, and works.
func TestStdioUpstreamDiesMidCall(t *testing.T) {
	testkit.Watchdog(t)
	c := front(t, testUpstream())
	first := c.CallTool("pid", nil).Text()
	require.NotEmpty(t, first)

	_, rpcErr := c.Call("tools/call", map[string]any{"name": "die"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeInternal), rpcErr.Code)
	assert.Equal(t, "upstream e is gone", rpcErr.Message)

	second := c.CallTool("pid", nil).Text()
	assert.NotEqual(t, first, second, "a new process serves the next call")
}

// TestKilledMidCall: a stdio upstream killed (SIGKILL) while a call is in
// flight answers that call at once with an error that names the upstream
// and wraps upstream.ErrGone; the next call of the session starts a new
// process, and works.
func TestKilledMidCall(t *testing.T) {
	testkit.Watchdog(t)
	ended := make(chan error, 8)
	srv := server.New(server.WithObserver(server.Observer{RequestEnded: endObserver{ended: ended}.RequestEnded}))
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{testUpstream()}})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	c := connect(t, srv)

	first := pidOf(t, c)
	require.NoError(t, <-ended, "the pid call")
	c.SendCallTool(9, "hold", nil)
	holding(t, c)
	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
	e := c.RecvError(9)
	assert.Equal(t, int64(protocol.CodeInternal), e.Code)
	assert.Equal(t, "upstream e is gone", e.Message)
	err = <-ended
	require.ErrorIs(t, err, upstream.ErrGone)
	var named interface{ Upstream() string }
	require.ErrorAs(t, err, &named)
	assert.Equal(t, "e", named.Upstream())

	second := pidOf(t, c)
	assert.NotEqual(t, first, second, "a new process serves the next call")
	starts, _ := g.Counts(0)
	assert.Equal(t, int64(3), starts, "the catalog's, and two for the session")
}

// endObserver hands the error of each tools/call that ended to ended.
type endObserver struct {
	ended chan error
}

func (o endObserver) RequestEnded(_ context.Context, req *server.Request, out server.Outcome) {
	if req.Method == "tools/call" {
		o.ended <- out.Err
	}
}

// TestDyingAtOnceBacksOff: a process that dies at its first call is
// started again at once the first time, then only after a backoff of
// 1 s, then 2 s; the calls meanwhile are refused at once without a
// start: -32000 with the seconds left in data.retryAfterSeconds, counted
// not_ready, not upstream_closed, and not timed as forwarded.
func TestDyingAtOnceBacksOff(t *testing.T) {
	testkit.Watchdog(t)
	clock := newClock()
	reg := prometheus.NewRegistry()
	srv, g := mountWith(t, gateway.WithClock(gateway.Config{Upstreams: []gateway.Upstream{testUpstream()}, Registerer: reg}, clock.Now))
	c := connect(t, srv)
	die := func() {
		t.Helper()
		_, rpcErr := c.Call("tools/call", map[string]any{"name": "die"})
		require.NotNil(t, rpcErr)
		assert.Equal(t, "upstream e is gone", rpcErr.Message)
	}
	refused := func(retryAfter int) {
		t.Helper()
		_, rpcErr := c.Call("tools/call", map[string]any{"name": "die"})
		require.NotNil(t, rpcErr)
		assert.Equal(t, int64(protocol.CodeServerBusy), rpcErr.Code)
		assert.Equal(t, fmt.Sprintf("upstream e is not ready; try again in %d s", retryAfter), rpcErr.Message)
		assert.JSONEq(t, fmt.Sprintf(`{"retryAfterSeconds":%d}`, retryAfter), string(rpcErr.Data))
	}
	starts := func() int64 {
		n, _ := g.Counts(0)
		return n - 1 // the catalog's
	}
	die() // the first process
	die() // started again at once
	require.Equal(t, int64(2), starts())
	for range 3 {
		refused(1) // within the backoff: no start
	}
	assert.Equal(t, int64(2), starts())
	clock.Advance(time.Second)
	die() // after 1 s: a start
	refused(2)
	assert.Equal(t, int64(3), starts())
	clock.Advance(time.Second)
	refused(1) // the backoff is 2 s now
	assert.Equal(t, int64(3), starts())
	clock.Advance(time.Second)
	die()
	assert.Equal(t, int64(4), starts())

	want := map[string]float64{
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=die,mcp_method_name=tools/call,outcome=upstream_closed,upstream=e}":         4,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=die,mcp_method_name=tools/call,outcome=not_ready,upstream=e}":               5,
		"mcp_client_operation_duration_seconds{error_type=upstream_closed,gen_ai_tool_name=die,mcp_method_name=tools/call,upstream=e}": 4,
		"mcp_gateway_upstream_state{state=ready,upstream=e}":                                                                           1, // its listing process serves
	}
	got := gathered(t, reg)
	assert.Equal(t, want, pick(got, want))
	assert.NotContains(t, got, "mcp_client_operation_duration_seconds{error_type=-32000,gen_ai_tool_name=die,mcp_method_name=tools/call,upstream=e}", "nothing was sent")
}

// TestStartWaitsWithTheCallersContext: while a start of the upstream
// hangs (its initialize unanswered), a call that waits for it and is
// cancelled ends at once; the start goes on and serves the next call.
func TestStartWaitsWithTheCallersContext(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	gate := make(chan struct{})
	entered := make(chan transport.ID, 1)
	ended := make(chan error, 8)
	srv := server.New(server.WithObserver(server.Observer{RequestEnded: endObserver{ended: ended}.RequestEnded}), server.WithMiddleware(func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "tools/call" {
				entered <- req.ID
			}
			return next(ctx, req)
		}
	}))
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: u.url, Shared: true}}})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	c := connect(t, srv)
	// The tool views of c's capabilities are listed (on sessions of their
	// own, closed once listed) before the upstream expires sessions.
	require.Contains(t, toolNames(c), "hello")

	u.holdNew(gate) // new sessions' initialize waits for the gate
	u.expire.Store(true)
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "hello"})
	require.NotNil(t, rpcErr, "the session expired")
	<-entered
	require.Error(t, <-ended)
	<-u.holding // the gateway starts it again, and waits

	c.SendCallTool(7, "hello", nil)
	<-entered
	c.Cancel(7, "no time")
	err = <-ended
	assert.Equal(t, protocol.ReasonClientCancel, server.ReasonOfCause(err), "%v", err)

	close(gate)
	assert.Equal(t, "hello from a", c.CallTool("hello", nil).Text())
}

// TestSharedUpstream: with Shared, two downstream sessions' calls go to
// one process, and their concurrent calls with the same request id each
// get their own answer.
func TestSharedUpstream(t *testing.T) {
	testkit.Watchdog(t)
	up := testUpstream()
	up.Shared = true
	srv, g := mountWith(t, gateway.Config{Upstreams: []gateway.Upstream{up}})
	one, two := connect(t, srv), connect(t, srv)
	one.SendCallTool(1, "pair", map[string]string{"who": "one"})
	two.SendCallTool(1, "pair", map[string]string{"who": "two"})
	a, b := textOf(t, one.RecvResult(1)), textOf(t, two.RecvResult(1))
	require.Regexp(t, `^\{"who":"one"\} [0-9.]+$`, a)
	require.Regexp(t, `^\{"who":"two"\} [0-9.]+$`, b)
	assert.Equal(t, a[len(`{"who":"one"} `):], b[len(`{"who":"two"} `):], "one process")
	starts, _ := g.Counts(0)
	assert.Equal(t, int64(1), starts)
}
