package server

// FlushOutcomes records the outcomes that wait for their batch, for the
// tests of package server_test (what serverhook.Server.Flush does for the
// observers of other packages).
func FlushOutcomes(s *Server) { s.flushOutcomes() }

// HasMethod reports whether s has a handler for method, for the tests of
// package server_test.
func HasMethod(s *Server, method string) bool { return s.hasMethod(method) }
