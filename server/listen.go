package server

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// subscriptions/listen (2026-07-28) replaces the session-wide notification
// stream of the initialize era: a client opens a long-lived request naming
// the notifications it wants, the server acknowledges first, then sends
// each matching notification on that request, tagged with its id, until the
// client cancels (or closes the stream).

// subscriptionFilter says which notifications a listen stream carries.
type subscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// listener is one open subscriptions/listen request.
type listener struct {
	live   context.Context // ends when the stream does: the client cancels, or the server stops it
	filter subscriptionFilter
	meta   map[string]any // {subscriptionId: id}
	stop   context.CancelCauseFunc
	since  uint64           // the change sequence when it subscribed: earlier changes are not its news
	events chan listenEvent // what notifyListeners found for it, written by its own handler
}

// listenEvent is a notification for a listen stream: its method, and the
// resource of notifications/resources/updated.
type listenEvent struct{ method, uri string }

// listenParams are the params of a notification on a listen stream.
type listenParams struct {
	Meta map[string]any `json:"_meta"`
	URI  string         `json:"uri,omitempty"`
}

// listenBacklog bounds the notifications waiting for a listen stream's
// handler to write them: past it, the client is not keeping up, and the
// stream ends with errListenBacklog.
const listenBacklog = 64

var errListenBacklog = errors.New("the client did not take its notifications as fast as they came: listen again")

type listenRegistry struct {
	mu   sync.Mutex
	open map[*listener]struct{}
}

func (lr *listenRegistry) add(l *listener) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	if lr.open == nil {
		lr.open = make(map[*listener]struct{})
	}
	lr.open[l] = struct{}{}
}

func (lr *listenRegistry) remove(l *listener) {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	delete(lr.open, l)
}

func (lr *listenRegistry) snapshot() []*listener {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	out := make([]*listener, 0, len(lr.open))
	for l := range lr.open {
		out = append(out, l)
	}
	return out
}

// stopAll ends every listen stream gracefully (Server.Shutdown).
func (lr *listenRegistry) stopAll() {
	for _, l := range lr.snapshot() {
		l.stop(nil)
	}
}

func (lr *listenRegistry) any() bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return len(lr.open) > 0
}

// listen handles subscriptions/listen: acknowledge the honored filter,
// then hold the request open until it is cancelled.
func (s *Server) listen(ctx context.Context, req *Request) (any, error) {
	var p struct {
		Notifications *subscriptionFilter `json:"notifications"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.Notifications == nil {
		return nil, Errorf(protocol.CodeInvalidParams, "subscriptions/listen needs a notifications object")
	}
	caps := s.capabilities()
	want := *p.Notifications
	honored := subscriptionFilter{
		ToolsListChanged:     want.ToolsListChanged && caps.Tools != nil,
		PromptsListChanged:   want.PromptsListChanged && caps.Prompts != nil,
		ResourcesListChanged: want.ResourcesListChanged && caps.Resources != nil,
	}
	if caps.Resources != nil {
		honored.ResourceSubscriptions = slices.Clone(want.ResourceSubscriptions)
		if s.itemView.Load() != nil {
			honored.ResourceSubscriptions = slices.DeleteFunc(honored.ResourceSubscriptions, func(uri string) bool {
				r, t, _ := s.resources.resolve(uri)
				return !s.resourceShown(req, uri, r, t) // hidden (item_view.go): not honored
			})
		}
	}
	stopped, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	l := &listener{
		live: stopped, filter: honored, meta: map[string]any{vocab.MetaSubscriptionID: req.ID},
		stop: stop, since: s.changes.seq.Add(1), events: make(chan listenEvent, listenBacklog),
	}
	s.listeners.add(l)
	defer s.listeners.remove(l)
	if sub := s.resourceSubscriber(); sub != nil && len(honored.ResourceSubscriptions) > 0 {
		sub.Listen(ctx, honored.ResourceSubscriptions) // before the ack: the updates it names reach the stream once acknowledged
	}
	ack := struct {
		Notifications subscriptionFilter `json:"notifications"`
		Meta          map[string]any     `json:"_meta"`
	}{honored, l.meta}
	if err := req.Session.Notify(ctx, "notifications/subscriptions/acknowledged", ack); err != nil {
		return nil, err
	}
	// This handler writes its stream's notifications itself: a
	// notification to every listener costs no goroutine, and a client that
	// does not read holds back no other.
	for stopped.Err() == nil {
		select {
		case ev := <-l.events:
			if stopped.Err() == nil { // not if it ended meanwhile
				if err := req.Session.Notify(ctx, ev.method, listenParams{Meta: l.meta, URI: ev.uri}); err != nil {
					return nil, err
				}
			}
		case <-stopped.Done():
		}
	}
	if ctx.Err() != nil { // the client ended it, or the connection is gone
		return nil, context.Cause(ctx)
	}
	if errors.Is(context.Cause(stopped), errListenBacklog) {
		return nil, Errorf(protocol.CodeServerBusy, "subscriptions/listen: %v", errListenBacklog)
	}
	// The server ends the stream (it is shutting down): the graceful
	// teardown, answered with the listen result.
	return struct {
		ResultType string         `json:"resultType"`
		Meta       map[string]any `json:"_meta"`
	}{"complete", l.meta}, nil
}

// notifyListeners sends a notification to every listen stream whose filter
// accepts it and that subscribed before the change it reports (at
// the change sequence changed; 0 for events that are news to every
// stream); uri is set for notifications/resources/updated. A stream that
// has ended gets nothing more, even while its handler is still on its way
// out of the registry.
func (s *Server) notifyListeners(method string, uri string, changed uint64) {
	for _, l := range s.listeners.snapshot() {
		if l.live.Err() != nil || changed != 0 && l.since > changed {
			continue
		}
		f := l.filter
		ok := false
		switch method {
		case "notifications/tools/list_changed":
			ok = f.ToolsListChanged
		case "notifications/prompts/list_changed":
			ok = f.PromptsListChanged
		case "notifications/resources/list_changed":
			ok = f.ResourcesListChanged
		case "notifications/resources/updated":
			ok = slices.Contains(f.ResourceSubscriptions, uri)
		}
		if !ok {
			continue
		}
		select {
		case l.events <- listenEvent{method, uri}: // its handler writes it
		default:
			l.stop(errListenBacklog)
		}
	}
}
