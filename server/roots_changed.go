package server

import "context"

// SetRootsChanged makes each notifications/roots/list_changed a client
// sends call changed, with the notification's context: [RequestFromContext]
// names its session, whose [ListRoots] now gives the new roots (nil: no
// one is told). changed runs on the goroutine that reads the session's
// messages, so it must return at once, leaving any I/O to a goroutine of
// its own. It is safe for concurrent use.
func (s *Server) SetRootsChanged(changed func(ctx context.Context)) {
	if changed == nil {
		s.rootsChanged.Store(nil)
		return
	}
	s.rootsChanged.Store(&changed)
}

// rootsListChanged is the handler of notifications/roots/list_changed: it
// tells the function SetRootsChanged set, if any.
func (s *Server) rootsListChanged(ctx context.Context, _ *Request) (any, error) {
	if changed := s.rootsChanged.Load(); changed != nil {
		(*changed)(ctx)
	}
	return nil, nil
}
