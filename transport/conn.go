package transport

import "context"

// Conn is one bidirectional JSON-RPC message stream: a stdio pipe pair, an
// in-memory pair, or one logical stream of an HTTP transport.
//
// Concurrency: Read is called by one goroutine at a time (the session's read
// loop); Write may be called by many goroutines at once and the Conn
// serializes them so that messages never interleave; Close may be called at
// any time, from any goroutine, any number of times.
//
// Errors: Read returns a [*DecodeError] for a frame that is not a valid
// JSON-RPC message; the Conn stays usable and the caller answers it. Every
// other Read or Write error is terminal and wraps exactly one class:
// [ErrClosed] when this side closed the Conn, [ErrPeerGone] when the peer
// vanished (EOF, EPIPE, ECONNRESET, a closed pipe). A transport decides the
// class from state it owns (has Close run?) before it looks at error values.
// Read may also return an error wrapping [ErrFrameTooLarge], which is terminal.
type Conn interface {
	// Read blocks until the next message arrives. It returns a *Request
	// (a request or notification), a *Response, or a Batch; or an
	// *Abandoned, an event rather than a message: the transport gave up a
	// request it had delivered (its stream closed for good), and the
	// receiver cancels it with Err. A transport that cannot honor ctx while
	// blocked must unblock when Close is called.
	Read(ctx context.Context) (Message, error)
	// Write sends one message: a *Request, a *Response or a ResponseBatch.
	// It returns once the message is handed to the underlying stream.
	Write(ctx context.Context, msg Message) error
	// Close closes both directions and unblocks pending Read and Write calls.
	Close() error
}
