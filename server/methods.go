package server

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// handle registers the built-in handler of a method. Features call it from
// New, through their register functions; the table is read-only afterwards.
func (s *Server) handle(method string, h Handler) {
	if _, dup := s.methods[method]; dup {
		panic("mcp: method registered twice: " + method)
	}
	s.methods[method] = h
}

// hasMethod reports whether the server has a handler for method (in some
// protocol version): the names a table keyed by method may hold, any other
// being a name a client made up. The method table is fixed by New, so it
// is safe for concurrent use and costs one map lookup.
func (s *Server) hasMethod(method string) bool { return s.methods[method] != nil }

// servedMethods returns the request methods the server answers now: those
// it has a handler for and whose feature it declares (tasks: enabled, or
// some still kept), sorted.
func (s *Server) servedMethods() []string {
	var out []string
	for m := range s.methods {
		if strings.HasPrefix(m, "notifications/") || strings.HasPrefix(m, "tasks/") && !s.tasksAvailable() {
			continue
		}
		if s.declares(m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// route is the innermost handler: the method table.
func (s *Server) route(ctx context.Context, req *Request) (any, error) {
	if h := s.methods[req.Method]; h != nil && s.declares(req.Method) {
		ctx, release, err := s.beginRequest(ctx, req) // progress token, log level (progress.go)
		if err != nil {
			return nil, err
		}
		defer release()
		res, err := h(ctx, req)
		if interrupted(err) {
			return req.era.interrupted(err)
		}
		return res, err
	}
	if req.IsNotification() {
		return nil, nil // unknown notifications are ignored
	}
	return nil, Errorf(protocol.CodeMethodNotFound, "method not found: %s", req.Method)
}

// interrupted reports whether a handler's err asks the client for input:
// by CallClient's interruption, or with questions of its own.
func interrupted(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*inputRequired](err); ok {
		return true
	}
	_, ok := errors.AsType[*InputRequired](err)
	return ok
}

func nopNotification(context.Context, *Request) (any, error) { return nil, nil }

// registerCore registers the lifecycle methods. The session acts on the
// notifications before the chain runs; their handlers exist so that
// middleware sees them like any other message.
func (s *Server) registerCore() {
	s.handle("initialize", func(_ context.Context, req *Request) (any, error) { return req.Session.initialize(req) })
	s.handle("ping", func(context.Context, *Request) (any, error) { return struct{}{}, nil })
	s.handle("server/discover", s.discover)
	s.handle("subscriptions/listen", s.listen)
	s.handle("notifications/initialized", nopNotification)
	s.handle("notifications/cancelled", nopNotification)
	s.handle("notifications/roots/list_changed", s.rootsListChanged)
}
