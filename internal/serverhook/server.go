package serverhook

import "context"

// ServerKey is the context key under which the context of a request's
// handler holds its server's *Server.
type ServerKey struct{}

// Server is what a server lends those that observe it. Its functions are
// safe for concurrent use.
type Server struct {
	// ID is the server itself (a *server.Server), to tell servers apart.
	ID any
	// Flush runs the end functions of the requests sealed so far that
	// still wait for their batch (server.WithOutcomeBatches), so that what
	// they record is up to date: a metrics collector calls it before it is
	// read, the live page before it is shown. It must not be called from
	// an end function.
	Flush func()
	// HasMethod reports whether the server has a handler for method (in
	// some protocol version): the names a table keyed by method may hold,
	// any other being a name a client made up.
	HasMethod func(method string) bool
	// Methods returns the request methods the server answers now: those
	// it has a handler for and whose feature it declares (tools once it
	// has a tool, tasks when enabled, ...).
	Methods func() []string
}

// ServerOf returns the Server of the request whose handler's context is
// ctx, nil outside a request.
func ServerOf(ctx context.Context) *Server {
	s, _ := ctx.Value(ServerKey{}).(*Server)
	return s
}

// Wired is implemented by a server.Option that wants the Server of each
// server it configures: server.New hands it over, after every option was
// applied. Package middleware and the live page register their observers
// with such an option: a struct that embeds server.WithObserver's Option
// (whose method it so keeps) and implements Wired.
type Wired interface {
	WireServer(s *Server)
}
