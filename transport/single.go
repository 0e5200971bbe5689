package transport

// Single is implemented by a Conn that carries one request and ends with
// its answer, such as a 2026-07-28 stateless request over Streamable HTTP:
// the session a server makes to serve it is no session in the protocol's
// sense, only the request's. A server serving a Single Conn (see
// [As]) runs the request on that session's context (nothing else
// shares it), and does not report it to its observers as a session
// started and ended. The only message such a Conn may deliver besides the
// request, through its Dispatcher while the request runs, is the client's
// notifications/cancelled for it, brought by another connection of the
// same client (the transport matched them): the server cancels the
// request with the client's cause.
type Single interface {
	Conn
	// SingleRequest marks the Conn as Single; it does nothing.
	SingleRequest()
}
