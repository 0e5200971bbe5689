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
