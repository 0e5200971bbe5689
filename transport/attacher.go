package transport

import (
	"context"
)

// Attacher is a server (streamable.Server) that can also run a session
// without a goroutine of its own: Attach sets the session up and returns,
// the session's messages come through the Dispatcher it hands the Conn
// (see [Driven]), and done is called with what Serve would have returned
// once the session ended. When Attach fails it closed the Conn and done is
// never called. The server package's *Server is one (see its Attach), and
// so is what middleware.CountConns returns for one. An Endpoint whose
// server is an Attacher attaches its 2025-era sessions, so that an idle one
// holds no goroutine.
type Attacher interface {
	Serve(ctx context.Context, conn Conn) error
	Attach(ctx context.Context, conn Driven, done func(error)) error
}
