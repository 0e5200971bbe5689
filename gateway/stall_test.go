package gateway_test

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// stallEnv makes the test binary an upstream that stops reading at its
// first tool call (stalltest.Upstream).
const stallEnv = "GATEWAY_TEST_STALL"

// TestStalledUpstreamAnswersEveryCallByItsDeadline is issue 67's stall
// repro: a shared stdio upstream stops reading while 20 calls, each
// larger than what a pipe holds, are on their way to it. Every call is
// answered -32001 by its deadline (none waits for a write to the
// upstream, or for its lock, or for a cancel to go out), and Close kills
// the upstream, which ignores end of input and SIGTERM, within its stop
// grace.
func TestStalledUpstreamAnswersEveryCallByItsDeadline(t *testing.T) {
	testkit.Watchdog(t)
	const timeout = time.Second
	said := newUpstreamSaid()
	inst, err := middleware.NewInstrumentation()
	require.NoError(t, err)
	srv := server.New(append(inst.ServerOptions(), server.WithTimeout(timeout))...)
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{
		Upstreams: []gateway.Upstream{{Name: "s", Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{stallEnv + "=1", "GORACE=atexit_sleep_ms=0"}, Shared: true}},
		Logger:    slog.New(slog.NewJSONHandler(said, nil)),
		StopGrace: 500 * time.Millisecond,
	})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = g.Close()
		}
		_ = srv.Close()
	})
	c := mcptest.Connect(t, srv)

	const calls = 20
	big := strings.Repeat("x", 32<<10) // 20 of them: ten times a pipe's buffer
	sent := map[string]time.Time{}     // when each call was handed to the server: its clock starts about then
	for id := range int64(calls) {
		c.SendCallTool(id+1, "stall", map[string]any{"data": big})
		sent[strconv.FormatInt(id+1, 10)] = time.Now()
	}
	pid, err := testkit.HostPID(strings.Fields(said.await(t, "stalled "))[1])
	require.NoError(t, err)
	var slowest time.Duration // the longest a call took, from its sending to its answer
	for range calls {
		r := c.RecvResponse() // in any order
		took := time.Since(sent[r.ID.String()])
		slowest = max(slowest, took)
		delete(sent, r.ID.String())
		if assert.NotNil(t, r.Error, "call %s", r.ID) {
			assert.Equal(t, int64(protocol.CodeRequestTimeout), r.Error.Code, "call %s: %s", r.ID, r.Error.Message)
		}
	}
	assert.Empty(t, sent, "each call answered once")
	t.Logf("%d calls to an upstream that stopped reading, deadline %v: the slowest answered %v after it was sent", calls, timeout, slowest)
	// About 1 s; the bound is loose for a loaded machine (under -race, 2
	// of 50 runs took 1.7 and 2 s). Before, calls never answered, or
	// waited for their cancel's write: 10 s more.
	assert.Less(t, slowest, 3*timeout, "every call answers by its deadline")

	start := time.Now()
	require.NoError(t, g.Close())
	closed = true
	took := time.Since(start)
	t.Logf("Close took %v (stop grace 500ms)", took)
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the upstream was killed")
	assert.Less(t, took, 2*time.Second, "Close waits for the upstream within its stop grace")
}
