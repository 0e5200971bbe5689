package server

import (
	"context"
	"errors"

	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Cancellation causes. Every cancelled request context carries exactly one of
// them, read with [context.Cause]; whoever cancels first sets it, and a
// request inherits its session's cause. One is provisional: a request whose
// stream closed is cancelled at once with a cause that reads as
// [ErrStreamClose] until it settles, within [StreamCloseGrace], into what
// the client did. [CancelReasonOf] waits for the final cause, which is the
// one the request's outcome records. Causes reach telemetry and logs, never
// the client.
var (
	// ErrClientCancel: the client sent notifications/cancelled for the
	// request. The cause's text carries the client's reason, if it gave one.
	ErrClientCancel = errors.New("mcp: request canceled by client")
	// ErrTransportClose: the client is gone: end of input, the peer
	// vanished, the transport was closed (a 2025 session deleted or
	// expired), a write failed, or the request's stream closed together
	// with the client's standalone stream (a client process that dies
	// closes every connection). The cause also wraps the transport error,
	// when there is one.
	ErrTransportClose = errors.New("mcp: transport closed")
	// ErrStreamClose: the client closed the request's own stream (its
	// HTTP response) and sent no notifications/cancelled for it, while
	// nothing showed the client itself gone: how clients that send no
	// notification cancel over HTTP, and, in the 2026-07-28 era, the
	// protocol's own cancel signal (a killed client looks the same). Until
	// [StreamCloseGrace] showed that nothing more came, it is provisional:
	// [CancelReasonOf] waits for the final cause.
	ErrStreamClose = errors.New("mcp: stream closed")
	// ErrShutdown: the server is shutting down ([Server.Shutdown] ran out of
	// time, or [Server.Close] was called).
	ErrShutdown = errors.New("mcp: server shutting down")
	// ErrHandlerTimeout: the request ran out of time ([Request.SetDeadline],
	// which the Timeout middleware calls).
	ErrHandlerTimeout = errors.New("mcp: handler timeout")
)

// ErrUpstreamClosed is no cancellation cause: nothing cancels a context
// with it. A handler returns an error that wraps it (with [errors.Is]; a
// [*Error] made by [NewError] of such an error keeps its code and message
// for the client) when what it relied on, such as the upstream MCP server
// a gateway forwards the request to, went away or closed while the
// request ran. The request's outcome is then an error whose cause (in
// [ReasonOfCause]'s words) is upstream_closed, as a handler's own timeout
// is timeout.
var ErrUpstreamClosed = errors.New("mcp: upstream closed")

// CancelReasonOf returns the final reason ctx was cancelled, the one its
// request's outcome records, or protocol.ReasonNone if it was not. A
// deadline without an explicit cause counts as a timeout. When ctx's
// request was cancelled by its stream's close, whose cause is provisional,
// it waits until the cause settled: at most [StreamCloseGrace] after the
// close, less when the client shows what it did. The wait is its
// caller's: a handler that waits returns that much later. Once it
// returned, [context.Cause] of ctx reads the final cause for good.
func CancelReasonOf(ctx context.Context) protocol.CancelReason {
	if ctx.Err() == nil {
		return protocol.ReasonNone
	}
	cause := context.Cause(ctx)
	var c *streamClose
	if errors.As(cause, &c) {
		c.await()
	}
	return ReasonOfCause(cause)
}

// ReasonOfCause classifies a cancellation cause (as returned by
// [context.Cause]) as it reads now, without waiting: a stream close's
// provisional cause is protocol.ReasonStreamClose until it settles (see
// [CancelReasonOf]). A nil cause is protocol.ReasonNone.
func ReasonOfCause(cause error) protocol.CancelReason {
	switch {
	case cause == nil:
		return protocol.ReasonNone
	case errors.Is(cause, ErrClientCancel):
		return protocol.ReasonClientCancel
	case errors.Is(cause, ErrTransportClose):
		return protocol.ReasonTransportClose
	case errors.Is(cause, ErrStreamClose):
		return protocol.ReasonStreamClose
	case errors.Is(cause, ErrShutdown):
		return protocol.ReasonShutdown
	case errors.Is(cause, ErrHandlerTimeout), errors.Is(cause, context.DeadlineExceeded):
		return protocol.ReasonTimeout
	case errors.Is(cause, ErrUpstreamClosed):
		return protocol.ReasonUpstreamClosed
	default:
		return protocol.ReasonOther
	}
}
