package server

// registerPrompts registers the prompts/* methods.
func (s *Server) registerPrompts() {}

// promptsCapability is the declared prompts capability, or nil.
func (s *Server) promptsCapability() *ListChangedCapability { return nil }
