package conncap

import "github.com/vigil-mcp/vigil/transport"

// ShedderSource is a server whose Shedder a transport may ask itself,
// before a request reaches a session: *server.Server is one (its
// WithShedder), and so is what middleware.CountConns returns for one.
type ShedderSource interface {
	Shedder() transport.Shedder
}

// Admitter is implemented by a Conn whose transport asks the server's
// Shedder about each request before delivering it, and answers the shed
// ones itself (the Streamable HTTP endpoint, with 503): AdmitsRequests
// reports whether it does, and the server then does not ask again.
type Admitter interface {
	AdmitsRequests() bool
}

// AdmitsRequests reports whether c, or the Conn c wraps (see [Wrapper]),
// is an [Admitter] that admits its requests.
func AdmitsRequests(c transport.Conn) bool {
	for c != nil {
		if a, ok := c.(Admitter); ok {
			return a.AdmitsRequests()
		}
		w, ok := c.(Wrapper)
		if !ok {
			return false
		}
		c = w.Unwrap()
	}
	return false
}
