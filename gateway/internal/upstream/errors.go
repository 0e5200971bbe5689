package upstream

import "errors"

// The ends of a session. Every call pending when a session ends, and every
// call made after, fails with an error that wraps exactly one of them.
var (
	// ErrGone means the upstream ended the session: it closed its end,
	// its process exited, a frame broke the transport's bounds, or a write
	// to it failed.
	ErrGone = errors.New("upstream: gone")
	// ErrClosed means this side closed the session ([Session.Close]).
	ErrClosed = errors.New("upstream: session closed")
)

// ErrSessionExpired is wrapped, beside [ErrGone], by the errors of a
// session whose HTTP upstream answered 404 for its session id: the session
// expired there, or the upstream restarted. The request so answered was
// not processed; calls pending at that moment may have been.
var ErrSessionExpired = errors.New("upstream: the upstream does not know the session (HTTP 404): it expired, or the upstream restarted")
