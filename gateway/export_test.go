package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
)

// WithClock returns cfg with the clock the gateway reads instead of
// time.Now: its backoffs and idle timeouts then follow it.
func WithClock(cfg Config, now func() time.Time) Config {
	cfg.now = now
	return cfg
}

// ReapIdle closes the idle upstream sessions of downstream sessions at
// once, as the gateway does every IdleTimeout/2, and waits for their
// processes.
func (g *Gateway) ReapIdle() {
	for _, m := range g.mounts {
		m.reapIdle(m.now())
		m.reapSpare()
	}
}

// WithSpareHook returns cfg with spawned told the process id of each
// spare process a stdio upstream keeps (spare.go).
func WithSpareHook(cfg Config, spawned func(pid int)) Config {
	cfg.spawned = spawned
	return cfg
}

// WithoutSpare returns cfg with no spare process kept, as before there
// was one: each session's first call spawns its process.
func WithoutSpare(cfg Config) Config {
	cfg.noSpare = true
	return cfg
}

// FillSpare spawns the i-th upstream's spare at once when there is room
// for one, as its spare loop does when asked, and returns the process id
// of the spare it holds then (0: none).
func (g *Gateway) FillSpare(i int) int {
	m := g.mounts[i]
	m.fillSpare()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.spare == nil {
		return 0
	}
	return m.spare.Pid()
}

// Counts returns how many sessions the i-th upstream started (its
// catalog's included) and how many calls MaxProcesses refused.
func (g *Gateway) Counts(i int) (starts, refused int64) {
	return g.mounts[i].starts.Load(), g.mounts[i].refused.Load()
}

// Settled returns a channel closed once the i-th upstream's first start
// is over, ready or failed.
func (g *Gateway) Settled(i int) <-chan struct{} { return g.mounts[i].settled }

// AwaitState waits until the i-th upstream is in state want.
func (g *Gateway) AwaitState(i int, want State) {
	for {
		st, changed := g.mounts[i].state.watch()
		if st == want {
			return
		}
		<-changed
	}
}

// WithDial returns cfg with its URL upstreams reached through dial
// instead of HTTP: a conn of the test's, in fake time.
func WithDial(cfg Config, dial func() transport.Conn) Config {
	cfg.dial = dial
	return cfg
}

// Refusals returns what the gateway answers an upstream's request method
// (roots/list, ...) with no client to ask, and for a client that did not
// declare the capability method needs.
func Refusals(ctx context.Context, method string) (noClient, undeclared error) {
	_, noClient = askClient(nil)(ctx, &transport.Request{ID: transport.Int64ID(1), Method: method})
	return noClient, clientError(method, fmt.Errorf("%w: %s", server.ErrCapability, method))
}

// AwaitTool is the server's tool wait that Mount sets (lifecycle.go).
func (g *Gateway) AwaitTool(ctx context.Context, name string) error { return g.awaitTool(ctx, name) }
