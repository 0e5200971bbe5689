package server

// SetResourceFallback makes resources/read of a URI that no registered
// resource or template serves call h, with no Template nor Variables;
// nil removes it, and such a read is answered "Resource not found" again.
// A gateway sets one to forward the read to the servers it fronts, which
// may serve resources they do not list, such as those a session made.
// An error of h that wraps [ErrResourceNotFound] is answered as for a URI
// nothing serves. While it is set the server declares resources, with
// nothing registered too. It is safe for concurrent use.
func (s *Server) SetResourceFallback(h ResourceHandler) {
	if h == nil {
		s.resourceFallback.Store(nil)
		return
	}
	s.resourceFallback.Store(&h)
}
