package transport

// ShedderSource is a server whose Shedder a transport may ask itself,
// before a request reaches a session: *server.Server is one (its
// WithShedder), and so is what middleware.CountConns returns for one.
type ShedderSource interface {
	Shedder() Shedder
}

// Admitter is implemented by a Conn whose transport asks the server's
// Shedder about each request before delivering it, and answers the shed
// ones itself (the Streamable HTTP endpoint, with 503): AdmitsRequests
// reports whether it does, and the server then does not ask again.
type Admitter interface {
	AdmitsRequests() bool
}
