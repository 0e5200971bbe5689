package server

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// notifySessions sends a notification to every initialized session that
// match accepts (nil: all), each on its own goroutine so that one slow
// client does not hold back the others. It never blocks the caller.
func (s *Server) notifySessions(method string, params any, match func(*Session) bool) {
	for _, ss := range s.Sessions() {
		if !ss.initialized() || (match != nil && !match(ss)) {
			continue
		}
		ctx := s.notifyContext() // fanout.go
		s.bg.Go(func() { _ = ss.Notify(ctx, method, params) })
	}
}

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
// already scheduled. With no initialized session there is nobody whose view
// is stale, and nothing is scheduled.
func (s *Server) listChanged(list string) {
	s.broadcast(broadcastEvent{List: list}) // to the other replicas (fanout.go)
	s.listChangedHere(list)
}

// listChangedHere is listChanged for this replica's clients only.
func (s *Server) listChangedHere(list string) {
	if !s.listeners.any() && !slices.ContainsFunc(s.Sessions(), (*Session).initialized) {
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
