package gateway

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// tally is what one upstream's sessions dropped of what it sent: those
// that ended, folded, and those live, read at each collection.
type tally struct {
	mu      sync.Mutex
	ended   upstream.Stats
	frames  int64                          // sessions ended by a frame over the bound
	stderr  int64                          // stderr lines over the rate, of processes that ended
	current map[*conn]struct{}             // sessions live
	procs   map[*upstream.Process]struct{} // processes live

	progress, logs atomic.Int64 // relayed notes of a call over its rate (bounded)
	unrouted       atomic.Int64 // notifications of no call that no caller is told (notified)
	withheld       atomic.Int64 // tools the catalog withheld (curation.go)
}

// observe makes the gateway's metrics when cfg has a Registerer, and
// registers them.
func (g *Gateway) observe(cfg Config) error {
	g.tally = make(map[string]*tally, len(cfg.Upstreams))
	names := make([]string, 0, len(cfg.Upstreams))
	for _, up := range cfg.Upstreams {
		g.tally[up.Name] = &tally{current: map[*conn]struct{}{}, procs: map[*upstream.Process]struct{}{}}
		names = append(names, up.Name)
	}
	if cfg.Registerer == nil {
		return nil
	}
	g.obs = metrics.NewUpstreams(metrics.Labels(protocol.Codes()), names, g.dropped, g.stateOf)
	if err := cfg.Registerer.Register(g.obs); err != nil {
		return err
	}
	return cfg.Registerer.Register(metrics.NewEgress(g.egressRefusals)) // sandbox.go
}

// egressRefusals adds what each sandboxed upstream's egress proxy
// refused so far.
func (g *Gateway) egressRefusals(add func(upstream, host, reason string, n int64)) {
	for _, m := range g.mounts {
		m.sandbox.refusals(func(host, reason string, n int64) { add(m.up.Name, host, reason, n) })
	}
}

// stateOf returns the state of the upstream name, for the metrics.
func (g *Gateway) stateOf(name string) string {
	for _, m := range g.mounts {
		if m.up.Name == name {
			return string(m.state.load())
		}
	}
	return ""
}

// dropped adds what each upstream's sessions dropped so far.
func (g *Gateway) dropped(add func(upstream, reason string, n int64)) {
	for name, t := range g.tally {
		t.mu.Lock()
		st, frames, stderr := t.ended, t.frames, t.stderr
		for c := range t.current {
			st = addStats(st, c.session.Stats())
		}
		for p := range t.procs {
			stderr += p.DroppedStderrLines()
		}
		t.mu.Unlock()
		add(name, metrics.DropNotification, st.DroppedNotifications+t.logs.Load()+t.unrouted.Load())
		add(name, metrics.DropProgress, st.DroppedProgress+t.progress.Load())
		add(name, metrics.DropLateResponse, st.LateResponses)
		add(name, metrics.DropInvalidMessage, st.InvalidMessages)
		add(name, metrics.DropRefusedRequest, st.RefusedRequests)
		add(name, metrics.DropOversizeFrame, frames)
		add(name, metrics.DropOversizeMessage, st.OversizeMessages)
		add(name, metrics.DropStderrLine, stderr)
		add(name, metrics.DropWithheldTool, t.withheld.Load())
	}
}

// track counts c, just opened, as a live session of m's upstream until it
// ends, then folds what it dropped; and its process, for stdio, until it
// exits. Gateway.Close waits for them. A start is counted when counted.
func (m *mount) track(c *conn, counted bool) {
	if counted {
		m.g.obs.Started(m.up.Name, true)
	}
	m.g.obs.SessionOpened(m.up.Name)
	t := m.g.tally[m.up.Name]
	t.mu.Lock()
	t.current[c] = struct{}{}
	if c.process != nil {
		t.procs[c.process] = struct{}{}
	}
	t.mu.Unlock()
	m.g.watch.Go(func() {
		<-c.session.Done()
		t.mu.Lock()
		delete(t.current, c)
		t.ended = addStats(t.ended, c.session.Stats())
		if errors.Is(c.session.Err(), transport.ErrFrameTooLarge) {
			t.frames++
		}
		t.mu.Unlock()
		m.g.obs.SessionEnded(m.up.Name)
		if c.process == nil {
			return
		}
		<-c.process.Exited()
		t.mu.Lock()
		delete(t.procs, c.process)
		t.stderr += c.process.DroppedStderrLines()
		t.mu.Unlock()
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
		OversizeMessages:     a.OversizeMessages + b.OversizeMessages,
	}
}
