package server

// registerResources registers the resources/* methods.
func (s *Server) registerResources() {}

// resourcesCapability is the declared resources capability, or nil.
func (s *Server) resourcesCapability() *ResourcesCapability { return nil }
