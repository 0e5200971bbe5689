package streamable

import (
	"context"
	"net/http"

	"github.com/vigil-mcp/vigil/transport"
)

// WithGuard puts the Endpoint behind g, the authorization guard in front
// of it, which the guard's own package makes (such as the OAuth resource
// server's Endpoint method, package middleware/oauth): g checks each
// message the Endpoint decodes (a tools/call's tool scopes, without
// parsing the body once more), and the requests other replicas forward go
// through g too, their principal carried as g's assertion instead of
// their credentials.
func WithGuard(g Guard) Option {
	return optionFunc(func(c *config) { c.guard = g })
}

// guarded runs the guard's message check, if any, on msg.
func (h *Endpoint) guarded(w http.ResponseWriter, r *http.Request, msg transport.Message) bool {
	return h.cfg.guard == nil || h.cfg.guard.CheckMessage(w, r, msg)
}

// Guard is an authorization guard in front of an Endpoint, given with
// [WithGuard]; middleware/oauth's resource server makes one.
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
