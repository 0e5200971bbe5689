// Package endpointguard is what an authorization guard in front of a
// streamable Endpoint hands the Endpoint, through streamable.WithGuard: a
// check of each message the Endpoint decodes, the guard to put in front
// of the requests other replicas forward, and the principal such a
// request carries instead of its credentials. The Endpoint is given it
// when it is made; nothing changes it afterwards.
package endpointguard

import (
	"context"
	"net/http"

	"github.com/vigil-mcp/vigil/transport"
)

// Guard is an authorization guard in front of an Endpoint.
type Guard interface {
	// Wrap returns next behind the guard: the Endpoint serves the
	// requests other replicas forward to it through Wrap(itself), so that
	// a forwarded request passes every check a request from the load
	// balancer passes.
	Wrap(next http.Handler) http.Handler
	// CheckMessage checks a message POSTed to the Endpoint once it is
	// decoded, before anything serves it: true lets it through; false
	// means the guard has answered the POST itself (a refusal) and the
	// message is dropped unserved. It runs on the POST's goroutine and
	// must not keep msg.
	CheckMessage(w http.ResponseWriter, r *http.Request, msg transport.Message) bool
	// AssertPrincipal returns an assertion of the principal r was
	// authorized as (nil: none), which a request forwarded to another
	// replica carries instead of its credentials; the cluster must
	// authenticate what it carries.
	AssertPrincipal(r *http.Request) []byte
	// RestorePrincipal returns ctx, the context of a forwarded request,
	// with the principal assertion names (called with nil when there is
	// none), before Wrap's handler serves it.
	RestorePrincipal(ctx context.Context, assertion []byte) context.Context
}
