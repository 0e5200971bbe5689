package gateway

import "time"

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
	}
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
