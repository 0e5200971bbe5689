package server

// SetInstructions sets the instructions that initialize and
// server/discover return from now on (none by default); a session
// initialized already keeps those it was given. A gateway sets those of
// the servers it fronts once it has met them.
func (s *Server) SetInstructions(text string) { s.instructions.Store(&text) }

// Instructions returns the instructions that initialize returns now:
// those of the last [Server.SetInstructions], or none.
func (s *Server) Instructions() string {
	if p := s.instructions.Load(); p != nil {
		return *p
	}
	return s.cfg.instructions
}
