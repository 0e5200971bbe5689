package server

import "strings"

// declares reports whether the server declares the capability that method
// is behind (tools/* the tools capability, and so on); a method behind
// none is declared. A request for a method behind a capability the server
// does not declare (prompts/list on a server without prompts, say) is a
// method the server does not implement: -32601 in every protocol era (in
// 2026-07-28 over HTTP, a 404), as the specification's completion page
// says ("Capability not supported") and as a client that reads the
// capabilities expects; a declared capability with nothing in it lists
// an empty array.
func (s *Server) declares(method string) bool {
	// Each case asks only what capabilitiesKey asks for its member.
	switch {
	case strings.HasPrefix(method, "skills/") || method == "resources/directory/read":
		return s.servesSkills()
	case strings.HasPrefix(method, "tools/"):
		return s.servesTools()
	case strings.HasPrefix(method, "prompts/"):
		return s.servesPrompts()
	case strings.HasPrefix(method, "resources/"):
		return s.servesResources()
	case method == "completion/complete":
		return s.hasCompleters()
	}
	return true
}
