package server

import "context"

// DropReason says why a request ended without a response being written. Its
// value is the label telemetry uses.
type DropReason string

// The drop reasons.
const (
	// DropCancelled: the client cancelled the request; MCP says not to answer.
	DropCancelled DropReason = "cancelled"
	// DropWriterClosed: the session's writer was already closed (the
	// transport closed, or this side closed it) when the answer was ready.
	DropWriterClosed DropReason = "writer_closed"
	// DropPeerGone: writing failed because the peer vanished (EPIPE,
	// ECONNRESET, its end of the pipe closed), now or on an earlier write.
	DropPeerGone DropReason = "peer_gone"
	// DropShutdown: the server cancelled the request to shut down.
	DropShutdown DropReason = "shutdown"
)

// DropReasons lists every DropReason, in a stable order.
func DropReasons() []DropReason {
	return []DropReason{DropCancelled, DropWriterClosed, DropPeerGone, DropShutdown}
}

// Observer receives what the session core knows and a middleware cannot see.
// Every method may be called concurrently, from the goroutine that found the
// event; implementations must be fast and must not block. Embed [NopObserver]
// so that methods added later need no change.
type Observer interface {
	// SessionStarted is called when Serve begins a session.
	SessionStarted(ctx context.Context, s *Session)
	// SessionEnded is called once per session, after every handler of the
	// session has returned, with the cause that ended it.
	SessionEnded(ctx context.Context, s *Session, cause error)
	// RequestCancelled is called once for each request whose context was
	// cancelled before its handler returned, with the first cause.
	RequestCancelled(ctx context.Context, req *Request, cause error)
	// ResponseDropped is called once for each request that ended without a
	// response being written, with the reason.
	ResponseDropped(ctx context.Context, req *Request, reason DropReason)
	// WriteFailed is called for each failed write of a message, with its
	// class: [DropWriterClosed] (our side closed) or [DropPeerGone].
	WriteFailed(ctx context.Context, s *Session, class DropReason, err error)
	// OutgoingFailed is called for each server-to-client request that was
	// still waiting for the client when the session ended.
	OutgoingFailed(ctx context.Context, s *Session, method string, err error)
	// HandlerPanicked is called when a handler panics; the request is then
	// answered with [CodeInternal]. stack is the goroutine's stack.
	HandlerPanicked(ctx context.Context, req *Request, value any, stack []byte)
	// MessageRejected is called for each incoming message answered with an
	// error before it reached a handler (malformed input, a duplicate id, a
	// limit, a request before initialize), or ignored as unanswerable.
	MessageRejected(ctx context.Context, s *Session, code Code, reason string)
}

// NopObserver is an [Observer] that does nothing; embed it to implement only
// some methods.
type NopObserver struct{}

var _ Observer = NopObserver{}

// SessionStarted does nothing.
func (NopObserver) SessionStarted(context.Context, *Session) {}

// SessionEnded does nothing.
func (NopObserver) SessionEnded(context.Context, *Session, error) {}

// RequestCancelled does nothing.
func (NopObserver) RequestCancelled(context.Context, *Request, error) {}

// ResponseDropped does nothing.
func (NopObserver) ResponseDropped(context.Context, *Request, DropReason) {}

// WriteFailed does nothing.
func (NopObserver) WriteFailed(context.Context, *Session, DropReason, error) {}

// OutgoingFailed does nothing.
func (NopObserver) OutgoingFailed(context.Context, *Session, string, error) {}

// HandlerPanicked does nothing.
func (NopObserver) HandlerPanicked(context.Context, *Request, any, []byte) {}

// MessageRejected does nothing.
func (NopObserver) MessageRejected(context.Context, *Session, Code, string) {}
