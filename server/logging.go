package server

// registerLogging registers logging/setLevel.
func (s *Server) registerLogging() {}

// loggingCapability is the declared logging capability, or nil.
func (s *Server) loggingCapability() *struct{} { return nil }
