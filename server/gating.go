package server

import "strings"

// declares reports whether the server declares the capability that method
// is behind (tools/* the tools capability, and so on); a method behind
// none is declared. A 2026-07-28 request for a method behind a capability
// the server does not declare (prompts/list on a server without prompts,
// say) is a method the server does not implement: -32601. Sessions of the
// initialize era keep the lenient behavior: an empty list, or a not-found
// error for a name (see era.offers).
func (s *Server) declares(method string) bool {
	// Each case asks only what capabilitiesKey asks for its member.
	switch {
	case strings.HasPrefix(method, "skills/") || method == "resources/directory/read":
		return s.resources.hasSkills()
	case strings.HasPrefix(method, "tools/"):
		return s.tools.hasTools()
	case strings.HasPrefix(method, "prompts/"):
		return s.prompts.hasAny()
	case strings.HasPrefix(method, "resources/"):
		return s.resources.hasAny()
	case method == "completion/complete":
		return s.hasCompleters()
	}
	return true
}
