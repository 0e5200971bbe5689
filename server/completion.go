package server

// registerCompletion registers completion/complete.
func (s *Server) registerCompletion() {}

// completionsCapability is the declared completions capability, or nil.
func (s *Server) completionsCapability() *struct{} { return nil }
