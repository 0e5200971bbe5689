package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// notifySessions sends a notification to every initialized session that
// match accepts (nil: all). It never blocks the caller.
//
// The notification is encoded once. For every session (match nil), it
// goes once to each multicast group the sessions joined (a Streamable HTTP
// Endpoint: one log entry and one wake for all its GET streams), and to
// the sessions of no group as to the others: the same message is written
// to every session, by a bounded set of writers (one per fanoutShare
// sessions). A write to a Streamable HTTP GET stream only queues it for the
// stream's own goroutine, and a transport whose writes can block (a slow
// stdio peer, a remote event store) holds back only its share.
func (s *Server) notifySessions(method string, params any, match func(*Session) bool) {
	ctx := s.notifyContext() // fanout.go
	raw, err := encodeParams(ctx, method, params)
	if err != nil {
		s.cfg.logger.Warn("cannot encode a notification to every session", "method", method, "error", err)
		return
	}
	msg := &transport.Request{Method: method, Params: raw}
	if err := msg.Freeze(); err != nil {
		s.cfg.logger.Warn("cannot encode a notification to every session", "method", method, "error", err)
		return
	}
	if match == nil {
		for _, g := range s.multicasts.all() {
			g.Send(ctx, msg)
		}
		if s.solo.Load() == 0 {
			return // every session is in a group (a single request's takes none of these)
		}
	}
	all := s.Sessions()
	for len(all) > 0 {
		share := all[:min(len(all), fanoutShare)]
		all = all[len(share):]
		s.bg.Go(func() {
			for _, ss := range share {
				if match == nil && ss.group == nil || match != nil && match(ss) {
					_ = ss.sendShared(ctx, msg)
				}
			}
		})
	}
}

// multicasts are the groups (transport.Multicast) the server's sessions
// joined: a handful (a Streamable HTTP Endpoint each), kept for the
// server's life.
type multicasts struct {
	mu     sync.Mutex
	groups []transport.Multicast
}

func (m *multicasts) add(g transport.Multicast) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.groups, g) {
		m.groups = append(m.groups, g)
	}
}

func (m *multicasts) all() []transport.Multicast {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.groups[:len(m.groups):len(m.groups)]
}

// joinMulticast has the session take its group's notifications for every
// session, now that it is initialized.
func (ss *Session) joinMulticast() {
	if ss.group == nil {
		return
	}
	ss.srv.multicasts.add(ss.group) // first: a notification sent from now on goes to the group
	ss.conn.(transport.MulticastMember).JoinMulticast()
}

// fanoutShare is how many sessions each writer of a notification to every
// session serves.
const fanoutShare = 512

// debouncer coalesces bursts of list changes into one notification per
// list, sent after the configured delay.
type debouncer struct {
	mu      sync.Mutex
	pending map[string]bool
	latest  map[string]uint64 // the sequence number of each list's last change
	seq     atomic.Uint64     // orders changes and subscriptions
}

// listChanged schedules notifications/<list>/list_changed ("tools",
// "resources" or "prompts") for every initialized session, unless one is
// already scheduled. With no session and no listen stream there is nobody whose view
// is stale, and nothing is scheduled.
func (s *Server) listChanged(list string) {
	s.broadcast(broadcastEvent{List: list}) // to the other replicas (fanout.go)
	s.listChangedHere(list)
}

// listChangedHere is listChanged for this replica's clients only.
func (s *Server) listChangedHere(list string) {
	if s.sessions.empty() && !s.listeners.any() {
		return
	}
	d := &s.changes
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.latest == nil {
		d.latest = make(map[string]uint64)
	}
	d.latest[list] = d.seq.Add(1)
	if d.pending[list] {
		return
	}
	if d.pending == nil {
		d.pending = make(map[string]bool)
	}
	d.pending[list] = true
	time.AfterFunc(s.cfg.listChangedDelay, func() {
		d.mu.Lock()
		delete(d.pending, list)
		changed := d.latest[list]
		d.mu.Unlock()
		method := "notifications/" + list + "/list_changed"
		s.notifySessions(method, nil, nil)
		s.notifyListeners(method, "", changed)
	})
}

// maxSharedBacklog is how many notifications to every session may wait
// for one session's writer: a transport whose writes block (stdio) on a
// client that does not read holds that many, not one per change for as
// long as the write timeout.
const maxSharedBacklog = 64

// errSharedBacklog is the failed write of a notification to every session
// that found maxSharedBacklog of them waiting.
var errSharedBacklog = errors.New("server: the client does not read: notification to every session dropped")

// sendShared writes n, a notification to every session, if the session is
// initialized and neither closed nor broken. With maxSharedBacklog of them
// waiting for its writer already, n is dropped, reported to WriteFailed as
// peer_gone.
func (ss *Session) sendShared(ctx context.Context, n *transport.Request) error {
	ss.mu.Lock()
	ready := ss.st.phase != phaseNew && !ss.st.closed && ss.st.broken == protocol.DropNone
	ss.mu.Unlock()
	if !ready {
		return nil
	}
	defer ss.backlog.Add(-1)
	if ss.backlog.Add(1) > maxSharedBacklog {
		ss.obs.WriteFailed(ctx, ss, protocol.DropPeerGone, errSharedBacklog)
		return errSharedBacklog
	}
	return ss.write(ctx, n)
}
