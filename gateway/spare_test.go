package gateway_test

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
)

// spareGateway mounts the test upstream with cfg's bounds and returns the
// server, the gateway and the channel told of each spare process kept.
func spareGateway(t *testing.T, cfg gateway.Config) (*server.Server, *gateway.Gateway, <-chan int) {
	t.Helper()
	spares := make(chan int, 16)
	if len(cfg.Upstreams) == 0 {
		cfg.Upstreams = []gateway.Upstream{testUpstream()}
	}
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.WithSpareHook(cfg, func(pid int) { spares <- pid }))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	return srv, g, spares
}

// alive reports whether the process pid exists.
func alive(pid int) bool { return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// TestSpareProcessServesNextSession: a stdio upstream keeps one process
// spawned ahead: each new session's first call is served by the spare
// spawned before it, and a new spare is spawned behind it.
func TestSpareProcessServesNextSession(t *testing.T) {
	testkit.Watchdog(t)
	srv, _, spares := spareGateway(t, gateway.Config{})
	seen := map[int]bool{}
	for range 3 {
		spare := <-spares
		require.False(t, seen[spare], "a new spare each time")
		seen[spare] = true
		assert.Equal(t, spare, pidOf(t, connect(t, srv)), "the session's first call is served by the spare")
	}
	assert.NotZero(t, <-spares, "a spare behind the last session")
}

// TestSpareCountsWithinMaxProcesses: the spare is one of MaxProcesses: with
// every process allowed serving a session there is none, and one is
// spawned again once a session ends.
func TestSpareCountsWithinMaxProcesses(t *testing.T) {
	testkit.Watchdog(t)
	srv, g, spares := spareGateway(t, gateway.Config{MaxProcesses: 2})
	first := <-spares
	a := connect(t, srv)
	assert.Equal(t, first, pidOf(t, a))
	second := <-spares
	b := connect(t, srv)
	assert.Equal(t, second, pidOf(t, b))
	assert.Zero(t, g.FillSpare(0), "two sessions hold both processes allowed: no spare")

	require.NoError(t, a.Close())
	third := <-spares // a's session ended: room for one
	assert.Equal(t, third, pidOf(t, connect(t, srv)))
}

// TestSpareEndsWhenIdleAndAtClose: a spare that no session took for
// IdleTimeout is ended (and none spawned while the gateway stays idle),
// the next session starts a process of its own and a spare behind it;
// Close ends the spare.
func TestSpareEndsWhenIdleAndAtClose(t *testing.T) {
	testkit.Watchdog(t)
	clk := newClock()
	srv, g, spares := spareGateway(t, gateway.WithClock(gateway.Config{IdleTimeout: time.Minute}, clk.Now))
	idle := <-spares
	clk.Advance(time.Minute)
	g.ReapIdle()
	assert.False(t, alive(idle), "the idle spare has exited")
	assert.Zero(t, g.FillSpare(0), "no spare while no session comes")

	c := connect(t, srv)
	assert.NotEqual(t, idle, pidOf(t, c))
	next := <-spares
	require.True(t, alive(next))
	_, _ = g.Close(), srv.Close()
	assert.False(t, alive(next), "Close ended the spare")
}

// TestSpareWithoutPing: an upstream that does not answer a ping before
// initialize: its first spare is ended after the start timeout, and the
// spares after it are kept without a ping and serve new sessions.
func TestSpareWithoutPing(t *testing.T) {
	testkit.Watchdog(t)
	up := testUpstream()
	up.Env = append(up.Env, noPingEnv+"=1")
	srv, _, spares := spareGateway(t, gateway.Config{Upstreams: []gateway.Upstream{up}, StartTimeout: 2 * time.Second})
	spare := <-spares // the second one spawned: kept without a ping
	assert.Equal(t, spare, pidOf(t, connect(t, srv)))
	assert.NotZero(t, <-spares)
}
