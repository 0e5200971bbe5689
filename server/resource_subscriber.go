package server

import "context"

// ResourceSubscriber is told of the resource subscriptions clients make,
// so that a server which fronts others (a gateway) can make them where
// the resources live: [Server.SetResourceSubscriber]. Each method runs in
// the handler of the client's request, whose context it gets
// ([RequestFromContext] names the caller), and must return by the time
// that context ends.
type ResourceSubscriber interface {
	// Subscribe is called by resources/subscribe of uri, once the
	// session holds the subscription: an error is answered, and the
	// subscription dropped.
	Subscribe(ctx context.Context, uri string) error
	// Unsubscribe is called by resources/unsubscribe of uri, once the
	// session no longer holds it: an error is answered.
	Unsubscribe(ctx context.Context, uri string) error
	// Listen is called by a subscriptions/listen stream (2026-07-28)
	// that names the resources uris, before the stream is acknowledged:
	// when it returns, their updates will reach the stream.
	Listen(ctx context.Context, uris []string)
}

// SetResourceSubscriber makes resources/subscribe, resources/unsubscribe
// and subscriptions/listen tell sub of each subscription (nil: no one).
// It is safe for concurrent use.
func (s *Server) SetResourceSubscriber(sub ResourceSubscriber) {
	if sub == nil {
		s.subscriber.Store(nil)
		return
	}
	s.subscriber.Store(&sub)
}

// resourceSubscriber returns the ResourceSubscriber set, or nil.
func (s *Server) resourceSubscriber() ResourceSubscriber {
	if p := s.subscriber.Load(); p != nil {
		return *p
	}
	return nil
}

// NotifyListeners sends a notification to this server's
// subscriptions/listen streams (2026-07-28) whose filter accepts it:
// notifications/tools/list_changed (prompts, resources), or
// notifications/resources/updated of uri. No session is told, nor any
// other replica: a gateway tells the callers an upstream session of
// theirs changed for, and those alone. It does not wait for the
// notifications to be written. It is safe for concurrent use.
func (s *Server) NotifyListeners(method, uri string) {
	s.notifyListeners(method, uri, 0)
}
