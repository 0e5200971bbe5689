package transport

import (
	"errors"
	"fmt"
	"net"
	"os"
)

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

// WrapIOError wraps err, a failure of operation op ("read", "write"), in its
// class. closedLocally is the transport's own record of whether Close has run:
// it decides first, because the same OS error (a closed pipe, for one) can
// come from either side. Otherwise errors that say this process closed the
// stream (os.ErrClosed, net.ErrClosed) are [ErrClosed], and everything else,
// EOF, EPIPE and ECONNRESET included, means the stream is unusable through no
// act of ours and is [ErrPeerGone]. A nil err stays nil.
func WrapIOError(op string, closedLocally bool, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrClosed) || errors.Is(err, ErrPeerGone) {
		return err
	}
	class := ErrPeerGone
	if closedLocally || errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) {
		class = ErrClosed
	}
	return fmt.Errorf("%s: %w: %w", op, class, err)
}

// ErrStreamGone is a third, per-message class of write error, for
// transports that carry each request on a stream of its own (Streamable
// HTTP): the stream the message belonged to is gone (its client
// disconnected), but the connection as a whole is fine. The message is
// lost; later messages are not affected.
var ErrStreamGone = errors.New("transport: stream gone")
