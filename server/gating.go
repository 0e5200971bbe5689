package server

import "strings"

// offered reports whether the server offers req's method. A 2026-07-28
// request for a method behind a capability the server does not declare
// (prompts/list on a server without prompts, say) is a method the server
// does not implement: -32601. Sessions of the initialize era keep the
// lenient behavior: an empty list, or a not-found error for a name.
func (s *Server) offered(req *Request) bool {
	if !req.Stateless {
		return true
	}
	caps := s.capabilities()
	switch {
	case strings.HasPrefix(req.Method, "tools/"):
		return caps.Tools != nil
	case strings.HasPrefix(req.Method, "prompts/"):
		return caps.Prompts != nil
	case strings.HasPrefix(req.Method, "resources/"):
		return caps.Resources != nil
	case req.Method == "completion/complete":
		return caps.Completions != nil
	}
	return true
}
