package streamable

import (
	"net/http"

	"github.com/vigil-mcp/vigil/internal/endpointguard"
	"github.com/vigil-mcp/vigil/transport"
)

// WithGuard puts the Endpoint behind g, the authorization guard in front
// of it, which the guard's own package makes (such as the OAuth resource
// server's Endpoint method, package middleware/oauth): g checks each
// message the Endpoint decodes (a tools/call's tool scopes, without
// parsing the body once more), and the requests other replicas forward go
// through g too, their principal carried as g's assertion instead of
// their credentials.
func WithGuard(g endpointguard.Guard) Option {
	return optionFunc(func(c *config) { c.guard = g })
}

// guarded runs the guard's message check, if any, on msg.
func (h *Endpoint) guarded(w http.ResponseWriter, r *http.Request, msg transport.Message) bool {
	return h.cfg.guard == nil || h.cfg.guard.CheckMessage(w, r, msg)
}
