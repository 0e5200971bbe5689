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
