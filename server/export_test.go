package server

// FlushOutcomes records the outcomes that wait for their batch, for the
// tests of package server_test (what serverhook.Server.Flush does for the
// observers of other packages).
func FlushOutcomes(s *Server) { s.flushOutcomes() }

// HasMethod reports whether s has a handler for method, for the tests of
// package server_test.
func HasMethod(s *Server, method string) bool { return s.hasMethod(method) }

// The bounds and the composition the tests of package server_test check.
const (
	DefaultPageSize     = defaultPageSize
	MaxCompletionValues = maxCompletionValues
)

// Chain is the composition of WithMiddleware, for the tests of package
// server_test that run a chain by hand.
func Chain(mw ...Middleware) Middleware { return chain(mw...) }

// WithInstructions sets the instructions initialize returns from the
// start, for the tests of package server_test (Server.SetInstructions
// does it after New).
func WithInstructions(text string) Option {
	return optionFunc(func(c *config) { c.instructions = text })
}

// ErrNoRequest is what the functions that act for a handler's request
// wrap when their context carries none, for the tests of package
// server_test.
var ErrNoRequest = errNoRequest
