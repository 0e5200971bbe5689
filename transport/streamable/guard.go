package streamable

import (
	"net/http"

	"github.com/vigil-mcp/vigil/transport"
)

// MessageGuard checks a message POSTed to an Endpoint once it is decoded,
// before anything serves it: true lets it through; false means the guard
// has answered the POST itself (a refusal) and the message is dropped
// unserved. It runs on the POST's goroutine and must not keep msg.
type MessageGuard func(w http.ResponseWriter, r *http.Request, msg transport.Message) bool

// SetMessageGuard makes h check every message POSTed to it with g (nil:
// none), such as an authorization guard in front of h that would
// otherwise read and parse the body once more to learn which tool a
// request calls. Call it before h serves.
func (h *Endpoint) SetMessageGuard(g MessageGuard) { h.guard.Store(&g) }

// guarded runs the message guard, if any, on msg.
func (h *Endpoint) guarded(w http.ResponseWriter, r *http.Request, msg transport.Message) bool {
	g := h.guard.Load()
	return g == nil || *g == nil || (*g)(w, r, msg)
}
