package server

// ExpectFeatures makes the server declare the tools, prompts and resources
// capabilities (with listChanged, and resources' subscribe) from now on,
// even while nothing of the kind is registered, for a server whose
// features come later: a gateway's, whose upstreams may still be starting
// when its first client initializes, and may serve resources they never
// list. That client lists empty arrays, then hears list_changed when
// items come, instead of being told for the whole session that the server
// has none. A call of a tool, prompt or resource not registered is
// answered as for an unknown one.
func (s *Server) ExpectFeatures() { s.expectsFeatures.Store(true) }
