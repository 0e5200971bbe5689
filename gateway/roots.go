package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/server"
)

// rootsApply is the least time an upstream that asked for its caller's
// roots when its session began is given, once answered, to apply them
// before its caller's first call is relayed (giveRoots). An upstream
// slower to answer (a loaded machine) is given rootsApplyScale times
// what its answers took, up to rootsApplyMax.
const (
	rootsApply      = 100 * time.Millisecond
	rootsApplyScale = 3
	rootsApplyMax   = 2 * time.Second
)

// rootsApplyTime is what giveRoots waits for an upstream to apply the
// roots it was given, when its ping and roots/list took took.
func rootsApplyTime(took time.Duration) time.Duration {
	return min(max(rootsApply, rootsApplyScale*took), rootsApplyMax)
}

// rootsNotifyTimeout bounds the write of one notifications/roots/list_changed
// to an upstream session: an upstream that stops reading is not waited on.
const rootsNotifyTimeout = 5 * time.Second

// giveRoots makes sure that c, the new upstream session of l, has l's
// caller's roots before any call of that caller is relayed on it: when
// the caller declared roots (and so does c: relayedCapabilities), it
// waits until the upstream has answered a ping and has had its answer
// to each roots/list it asked before (upstream.Session.Settle), then,
// when it asked, rootsApplyTime and another ping. server-filesystem asks on
// initialized and takes what the caller answers as its allowed
// directories, once it has resolved them on disk: without the wait, the
// first call ran with its command-line directories. A stdio upstream's messages
// come in order, so what it asked on initialized is known by its answer
// to the ping; an HTTP upstream's roots/list comes on another stream,
// mostly before. The wait is bounded by ctx (the start timeout); when it
// fails, c is closed and the start has failed. The spare process is
// initialized here too, when its caller takes it (spare.go): it has
// never been told another caller's roots.
func (m *mount) giveRoots(ctx context.Context, l *link, c *conn) error {
	if l.ss == nil || l.stateless || l.caps != nil || l.ss.ClientCapabilities().Roots == nil {
		return nil // no caller's session, or a caller without roots
	}
	began := time.Now()
	asked, err := c.session.Settle(ctx, "roots/list")
	if err == nil && asked > 0 {
		// It applies them on its own time (server-filesystem resolves
		// each on disk), and says nothing when done: it is given
		// rootsApply, or longer when it was slow to answer (its
		// machine is loaded), then pinged again (and any roots/list it
		// asked meanwhile answered).
		timer := time.NewTimer(rootsApplyTime(time.Since(began)))
		select {
		case <-timer.C:
			_, err = c.session.Settle(ctx, "roots/list")
		case <-ctx.Done():
			timer.Stop()
			err = context.Cause(ctx)
		}
	}
	if err != nil {
		c.close()
		m.g.obs.Started(m.up.Name, false)
		return fmt.Errorf("gateway: upstream %s: its new session was not given the caller's roots: %w", m.up.Name, err)
	}
	if asked > 0 {
		m.log.Debug("gateway: the caller's roots given before its first call", "upstream", m.up.Name, "session", l.ss.ID(), "asked", asked)
	}
	return nil
}

// rootsChanged is the server's roots hook (server.Server.SetRootsChanged):
// a caller's roots changed. Each upstream session of that caller's own (a
// 2025 session's link: not a shared one, whose roots belong to no client,
// nor a 2026-07-28 one, whose roots are asked per request) is told, so
// that an upstream that keeps its roots (server-filesystem's allowed
// directories) asks again; it declared roots.listChanged, as the caller
// did (relayedCapabilities). A caller with no upstream session yet has
// nothing to tell: its session asks for the roots when it starts.
func (g *Gateway) rootsChanged(ctx context.Context) {
	req := server.RequestFromContext(ctx)
	if req == nil || !req.InSession() {
		return
	}
	for _, m := range g.mounts {
		m.rootsChanged(req.Session)
	}
}

// rootsChanged tells the link of the downstream session ss, if it has
// one, that its caller's roots changed.
func (m *mount) rootsChanged(ss *server.Session) {
	if m.up.Shared {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.sessions[ss]
	if l == nil || m.ctx.Err() != nil {
		return
	}
	if l.roots.tell() {
		m.watchers.Go(l.tellRoots) // under m.mu, as linkOf's: close waits for it
	}
}

// tellRoots sends notifications/roots/list_changed on l's upstream
// session, again for as long as changes came while it sent: a change
// that arrives during a send is told after it, and any number of them
// once (the upstream asks for the whole list anyway).
func (l *link) tellRoots() {
	for {
		if c := l.conn.Load(); c != nil {
			ctx, cancel := context.WithTimeout(l.ctx, rootsNotifyTimeout)
			if err := c.session.Notify(ctx, "notifications/roots/list_changed", nil); err != nil && l.ctx.Err() == nil {
				l.m.log.Debug("gateway: a caller's roots change was not told upstream", "upstream", l.m.up.Name, "error", err)
			}
			cancel()
		}
		if l.roots.sent() {
			return
		}
	}
}

// coalesced counts the roots changes of a link not yet told: 0, none
// and no sender; 1, a sender at work; 2, a sender at work and a change
// since its send began.
type coalesced struct{ state atomic.Int32 }

// tell records a change, and reports whether the caller must start the
// sender (none was at work).
func (c *coalesced) tell() bool {
	for {
		s := c.state.Load()
		if s == 2 {
			return false
		}
		if c.state.CompareAndSwap(s, s+1) {
			return s == 0
		}
	}
}

// sent records that the sender told the upstream, and reports whether
// it is done: no change came since its send began.
func (c *coalesced) sent() bool {
	if c.state.CompareAndSwap(1, 0) {
		return true
	}
	c.state.Store(1) // was 2: send once more
	return false
}
