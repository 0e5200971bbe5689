package streamable

import (
	"net/http"
	"time"

	"github.com/vigil-mcp/vigil/transport"
)

var _ transport.ClientPresence = (*session)(nil)

// StandaloneClosedAt returns when the client last left a GET stream of the
// session (its connection closed, not the server's end of it), or the zero
// time when it never did or a GET stream is open again (see
// transport.ClientPresence): the server reads a request's stream closing
// then as its client gone, a killed process closing all its connections.
// On a shared session only this replica's GET streams count.
func (s *session) StandaloneClosedAt() time.Time {
	if s.gets.Load() > 0 {
		return time.Time{}
	}
	left := s.getLeft.Load()
	if left == 0 {
		return time.Time{}
	}
	return time.Unix(0, left)
}

// serveGetPresent serves a GET stream of s (see serveGet), counted open
// while it lasts, and notes when its client left it.
func (s *session) serveGetPresent(w http.ResponseWriter, r *http.Request) {
	s.gets.Add(1)
	func() {
		defer s.gets.Add(-1) // before the hook, which reads StandaloneClosedAt
		s.serveGet(w, r)
	}()
	if r.Context().Err() != nil && !s.ended() {
		s.getLeft.Store(time.Now().UnixNano()) // the client's connection closed under it
		if f := s.onGetLeft.Load(); f != nil {
			(*f)()
		}
	}
}

// OnStandaloneClosed has f called each time the client leaves a GET
// stream of s (see transport.ClientPresence).
func (s *session) OnStandaloneClosed(f func()) { s.onGetLeft.Store(&f) }
