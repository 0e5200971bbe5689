package middleware

import (
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
)

// requestScope is what a request's span, exemplar and log line read from
// contexts, read once for all three: a lookup that finds nothing walks the
// whole chain of contexts under the request (the session's, the
// transport's, net/http's), a few hundred instructions each time.
type requestScope struct {
	principal *auth.Principal   // the request's (principalOf); nil without one
	span      trace.SpanContext // the request's span's; invalid when not traced
}

// principalOf returns the principal of req's arrival, nil without one.
func principalOf(req *server.Request) *auth.Principal {
	p, _ := auth.PrincipalFromContext(req.ArrivalContext())
	return p
}
