package gateway_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/internal/testkit/hostiletest"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
)

// hostileEnv makes the test binary a hostile stdio upstream (hostiletest.Upstream).
const hostileEnv = "GATEWAY_TEST_HOSTILE"

// lines is a log destination that hands each record's message to a
// channel, so that a test can wait for one.
type lines struct{ ch chan string }

func (l lines) Write(p []byte) (int, error) {
	var r struct {
		Msg  string `json:"msg"`
		Line string `json:"line"`
	}
	if json.Unmarshal(p, &r) == nil && r.Msg == "upstream stderr" {
		select {
		case l.ch <- r.Line:
		default:
		}
	}
	return len(p), nil
}

// TestHostileUpstream: next to a good upstream, a hostile one is hammered
// with calls that never end, an endless flood of progress and a huge
// result. The good upstream and another session keep working throughout;
// the calls that never end end by the client's cancel, recorded
// client_cancel, and the hostile upstream gets notifications/cancelled;
// the flood is relayed at a bounded rate, the rest dropped and counted,
// and the call ends with its result; a huge result fails its call only,
// with an error naming the bound, counted, the hostile session living
// on, and costs the gateway's memory far less than its size.
func TestHostileUpstream(t *testing.T) {
	testkit.Watchdog(t)
	good := startUpstream(t, "good")
	tr := newTraced(t, tracetest.NewInMemoryExporter(), telemetry.MetricsConfig{})
	stderr := lines{ch: make(chan string, 100)}
	g, err := gateway.Mount(t.Context(), tr.srv, gateway.Config{
		Upstreams: []gateway.Upstream{
			// It builds results of 128 MiB, several copies of them under
			// -race: more than a sandbox's default data bound.
			{Name: "bad", Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{hostileEnv + "=1"}, Sandbox: gateway.Sandbox{MemoryBytes: -1}},
			{Name: "good", URL: good.url},
		},
		Registerer: tr.reg,
		Logger:     slog.New(slog.NewJSONHandler(stderr, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	a, b := mcptest.Connect(t, tr.srv), mcptest.Connect(t, tr.srv)

	// Calls that never end, a flood, and the good upstream meanwhile.
	const never = 3
	for id := range never {
		a.SendCallTool(int64(100+id), "bad_never", nil)
	}
	a.Request(200, "tools/call", map[string]any{"name": "bad_flood", "_meta": map[string]any{"progressToken": "f"}})
	var wg sync.WaitGroup
	for range 4 { // other sessions (a client is not for concurrent calls)
		other := mcptest.Connect(t, tr.srv)
		wg.Go(func() { assert.Equal(t, "hello from good", other.CallTool("good_hello", nil).Text()) })
	}
	progress := 0
	for {
		m := a.Recv()
		if n, ok := m.(*transport.Request); ok && n.Method == "notifications/progress" {
			progress++
			continue
		}
		r, ok := m.(*transport.Response)
		require.True(t, ok, "%T", m)
		require.Equal(t, "200", r.ID.String())
		require.Nil(t, r.Error)
		assert.Contains(t, string(r.Result), "flooded")
		break
	}
	wg.Wait()
	assert.Less(t, progress, hostiletest.FloodNotes/2, "the flood is relayed at a bounded rate")

	// The client cancels the calls that never end: the upstream hears it.
	for id := range never {
		a.Cancel(int64(100+id), "enough")
	}
	cancelled := map[string]bool{}
	for len(cancelled) < never {
		if line := <-stderr.ch; strings.HasPrefix(line, "cancelled ") {
			cancelled[line] = true
		}
	}
	assert.Equal(t, "hello from good", b.CallTool("good_hello", nil).Text())

	// Huge results: refused with a clear error; what they cost the
	// gateway is bounded by the message bound (4 MiB), not their size.
	huge := func(mib int) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, rpcErr := a.Call("tools/call", map[string]any{"name": "bad_huge", "arguments": map[string]any{"mib": mib}})
		runtime.ReadMemStats(&after)
		require.NotNil(t, rpcErr)
		var size int
		_, err := fmt.Sscanf(rpcErr.Message, "upstream bad answered with a message of %d bytes, over the gateway's bound on a message of an upstream, 4194304 bytes", &size)
		require.NoError(t, err, rpcErr.Message)
		assert.Greater(t, size, mib<<20, "its size")
		assert.Contains(t, rpcErr.Message, "-upstream-max-message")
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("a %d MiB result cost %.1f MiB of allocations", mib, float64(allocated)/(1<<20))
		return allocated
	}
	small, big := huge(16), huge(128)
	assert.Less(t, big, small+4<<20, "8 times the size costs no more")
	assert.Less(t, big, uint64(32<<20), "a 128 MiB result is never held whole")
	assert.Equal(t, "hello from good", b.CallTool("good_hello", nil).Text())

	require.NoError(t, g.Close()) // waits for the sessions' ends to be counted
	got := gathered(t, tr.reg)
	want := map[string]float64{
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=never,mcp_method_name=tools/call,outcome=cancelled,upstream=bad}": never,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=flood,mcp_method_name=tools/call,outcome=ok,upstream=bad}":        1,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=huge,mcp_method_name=tools/call,outcome=error,upstream=bad}":      2,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=hello,mcp_method_name=tools/call,outcome=ok,upstream=good}":       6,
		"mcp_server_cancellations_total{cause=client_cancel,mcp_method_name=tools/call}":                                     never,
		"mcp_gateway_upstream_dropped_total{reason=oversize_message,upstream=bad}":                                           2,
		"mcp_gateway_upstream_dropped_total{reason=oversize_frame,upstream=bad}":                                             0,
		"mcp_gateway_upstream_starts_total{result=ok,upstream=bad}":                                                          2, // the listing session and a's: the huge results ended neither
	}
	assert.Equal(t, want, pick(got, want))
	dropped := got["mcp_gateway_upstream_dropped_total{reason=progress,upstream=bad}"]
	assert.Greater(t, dropped, float64(hostiletest.FloodNotes/2), "the flood beyond the relay's rate is dropped and counted")
	assert.LessOrEqual(t, float64(progress), hostiletest.FloodNotes-dropped)
}

// TestNotificationOfNoCallCounted: a log message an upstream sends
// outside any call, on the GET stream of each of its sessions (the
// listing session's and the caller's), is told to no caller and counted
// as dropped, reason notification: nothing is lost silently.
func TestNotificationOfNoCallCounted(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	tr := newTraced(t, tracetest.NewInMemoryExporter(), telemetry.MetricsConfig{Upstreams: []string{"a"}})
	tr.mount(t, gateway.Upstream{Name: "a", URL: u.url})
	c := mcptest.Connect(t, tr.srv)
	require.Equal(t, "hello from a", c.CallTool("hello", nil).Text())
	const dropped = "mcp_gateway_upstream_dropped_total{reason=notification,upstream=a}"
	require.Zero(t, gathered(t, tr.reg)[dropped])
	sessions := u.srv.Sessions()
	require.Len(t, sessions, 2, "the listing session and the caller's")
	for _, ss := range sessions {
		u.gets.await(ss.ID())
		require.NoError(t, ss.Notify(t.Context(), "notifications/message", map[string]any{"level": "info", "data": "outside any call"}))
	}
	require.Eventually(t, func() bool { return gathered(t, tr.reg)[dropped] == float64(len(sessions)) }, 10*time.Second, 5*time.Millisecond)
}
