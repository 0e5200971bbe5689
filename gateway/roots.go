package gateway

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/server"
)

// rootsNotifyTimeout bounds the write of one notifications/roots/list_changed
// to an upstream session: an upstream that stops reading is not waited on.
const rootsNotifyTimeout = 5 * time.Second

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
