package transport

import "errors"

// The two classes of terminal I/O error. Every terminal Read or Write error of
// a [Conn] wraps exactly one of them, so callers branch with [errors.Is].
var (
	// ErrClosed means this side closed the Conn (or the stream under it).
	ErrClosed = errors.New("transport: closed")
	// ErrPeerGone means the peer vanished: end of stream, a broken pipe, a
	// reset connection, or its end of a pipe closed.
	ErrPeerGone = errors.New("transport: peer gone")
	// ErrFrameTooLarge means an incoming frame exceeded the transport's size
	// limit. The transport stops reading at the limit, so the rest of the
	// frame is never buffered; the stream cannot be resynchronised and the
	// error is terminal.
	ErrFrameTooLarge = errors.New("transport: frame too large")
)

// ErrStreamGone is a third, per-message class of write error, for
// transports that carry each request on a stream of its own (Streamable
// HTTP): the stream the message belonged to is gone (its client
// disconnected), but the connection as a whole is fine. The message is
// lost; later messages are not affected.
var ErrStreamGone = errors.New("transport: stream gone")
