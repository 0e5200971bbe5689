package server

import "github.com/vigil-mcp/vigil/transport"

// isSingle reports whether conn, or a Conn beneath it, carries one
// request (transport.Single).
func isSingle(conn transport.Conn) bool {
	_, ok := transport.As[transport.Single](conn)
	return ok
}

// admitsRequests reports whether conn's transport asks the Shedder itself
// (transport.Admitter), looking beneath the Conns that wrap it.
func admitsRequests(conn transport.Conn) bool {
	a, ok := transport.As[transport.Admitter](conn)
	return ok && a.AdmitsRequests()
}
