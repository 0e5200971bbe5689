package gateway

import (
	"errors"
	"sync"

	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/upstream"
	"github.com/vigil-mcp/vigil/transport"
)

// tally is what one upstream's sessions dropped of what it sent: those
// that ended, folded, and those live, read at each collection.
type tally struct {
	mu      sync.Mutex
	ended   upstream.Stats
	frames  int64 // sessions ended by a frame over the bound
	stderr  int64 // stderr lines over the rate, of processes that ended
	current map[*conn]struct{}
}

// observe makes the gateway's metrics when cfg has a Registerer, and
// registers them.
func (g *Gateway) observe(cfg Config) error {
	g.tally = make(map[string]*tally, len(cfg.Upstreams))
	names := make([]string, 0, len(cfg.Upstreams))
	for _, up := range cfg.Upstreams {
		g.tally[up.Name] = &tally{current: map[*conn]struct{}{}}
		names = append(names, up.Name)
	}
	if cfg.Registerer == nil {
		return nil
	}
	g.obs = metrics.NewUpstreams(names, g.dropped)
	return cfg.Registerer.Register(g.obs)
}

// dropped adds what each upstream's sessions dropped so far.
func (g *Gateway) dropped(add func(upstream, reason string, n int64)) {
	for name, t := range g.tally {
		t.mu.Lock()
		st, frames, stderr := t.ended, t.frames, t.stderr
		for c := range t.current {
			st = addStats(st, c.session.Stats())
			if c.process != nil {
				stderr += c.process.DroppedStderrLines()
			}
		}
		t.mu.Unlock()
		add(name, metrics.DropNotification, st.DroppedNotifications)
		add(name, metrics.DropProgress, st.DroppedProgress)
		add(name, metrics.DropLateResponse, st.LateResponses)
		add(name, metrics.DropInvalidMessage, st.InvalidMessages)
		add(name, metrics.DropRefusedRequest, st.RefusedRequests)
		add(name, metrics.DropOversizeFrame, frames)
		add(name, metrics.DropStderrLine, stderr)
	}
}

// track counts c, just opened, as a live session of m's upstream until it
// ends (and, for stdio, its process exits), then folds what it dropped.
func (m *mount) track(c *conn) {
	m.g.obs.Started(m.up.Name, true)
	m.g.obs.SessionOpened(m.up.Name)
	t := m.g.tally[m.up.Name]
	t.mu.Lock()
	t.current[c] = struct{}{}
	t.mu.Unlock()
	m.g.watch.Go(func() {
		<-c.session.Done()
		if c.process != nil {
			<-c.process.Exited()
		}
		t.mu.Lock()
		delete(t.current, c)
		t.ended = addStats(t.ended, c.session.Stats())
		if errors.Is(c.session.Err(), transport.ErrFrameTooLarge) {
			t.frames++
		}
		if c.process != nil {
			t.stderr += c.process.DroppedStderrLines()
		}
		t.mu.Unlock()
		m.g.obs.SessionEnded(m.up.Name)
	})
}

// addStats returns a plus b.
func addStats(a, b upstream.Stats) upstream.Stats {
	return upstream.Stats{
		DroppedNotifications: a.DroppedNotifications + b.DroppedNotifications,
		DroppedProgress:      a.DroppedProgress + b.DroppedProgress,
		LateResponses:        a.LateResponses + b.LateResponses,
		InvalidMessages:      a.InvalidMessages + b.InvalidMessages,
		RefusedRequests:      a.RefusedRequests + b.RefusedRequests,
	}
}
