package server

import (
	"context"
	"encoding/json"

	"github.com/vigil-mcp/vigil/transport"
)

// Fanout carries what a server tells every client — that a list of tools,
// resources or prompts changed, that a resource was updated — to the other
// replicas of a service whose sessions are shared (see package
// redisshare), so that each replica's server tells its own sessions and
// subscriptions/listen streams. redisshare's Shared.ServerOptions
// configures one on Redis with [WithFanout].
type Fanout interface {
	// Broadcast sends event to every other replica.
	Broadcast(ctx context.Context, event []byte) error
	// ReceiveBroadcasts has deliver called with every event another
	// replica broadcasts, until cancel is called.
	ReceiveBroadcasts(deliver func(event []byte)) (cancel func(), err error)
}

// WithFanout has the server broadcast its list changes and resource
// updates to the other replicas through f, and tell its own clients of
// theirs.
func WithFanout(f Fanout) Option {
	return optionFunc(func(c *config) { c.fanout = f })
}

// broadcastEvent is what a server broadcasts: a list's change or a
// resource's update.
type broadcastEvent struct {
	List string `json:"list,omitempty"` // "tools", "resources" or "prompts"
	URI  string `json:"uri,omitempty"`  // the updated resource
}

// startFanout follows the other replicas' broadcasts.
func (s *Server) startFanout() {
	f := s.cfg.fanout
	if f == nil {
		return
	}
	cancel, err := f.ReceiveBroadcasts(s.receiveBroadcast)
	if err != nil {
		s.cfg.logger.Warn("cannot follow the other replicas' list changes and resource updates", "error", err)
		return
	}
	s.stopFanout = cancel
}

// broadcast tells the other replicas of a change here.
func (s *Server) broadcast(ev broadcastEvent) {
	f := s.cfg.fanout
	if f == nil {
		return
	}
	data, _ := json.Marshal(ev) // strings only: never fails
	if err := f.Broadcast(context.Background(), data); err != nil {
		s.cfg.logger.Warn("cannot tell the other replicas of a change", "list", ev.List, "uri", ev.URI, "error", err)
	}
}

// receiveBroadcast tells this replica's clients of another replica's change.
func (s *Server) receiveBroadcast(data []byte) {
	var ev broadcastEvent
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	switch {
	case ev.List == "tools" || ev.List == "resources" || ev.List == "prompts":
		s.listChangedHere(ev.List)
	case ev.URI != "":
		s.resourceUpdatedHere(ev.URI)
	}
}

// notifyContext is the context a notification for every session is
// written with: marked as broadcast when the other replicas are told of
// it too, so that a shared session's transport does not also relay it.
func (s *Server) notifyContext() context.Context {
	if s.cfg.fanout == nil {
		return context.Background()
	}
	return transport.ContextWithBroadcast(context.Background())
}
