package server

import (
	"context"
	"errors"
)

// Cancellation causes. Every cancelled request context carries exactly one of
// them, read with [context.Cause]; whoever cancels first sets it, and a
// request inherits its session's cause. Causes reach telemetry and logs, never
// the client.
var (
	// ErrClientCancel: the client sent notifications/cancelled for the
	// request. The cause's text carries the client's reason, if it gave one.
	ErrClientCancel = errors.New("mcp: request canceled by client")
	// ErrTransportClose: the connection is gone: end of input, the peer
	// vanished, the transport was closed, or a write failed. The cause also
	// wraps the transport error, when there is one.
	ErrTransportClose = errors.New("mcp: transport closed")
	// ErrShutdown: the server is shutting down ([Server.Shutdown] ran out of
	// time, or [Server.Close] was called).
	ErrShutdown = errors.New("mcp: server shutting down")
	// ErrHandlerTimeout: the handler ran out of time (the Timeout middleware
	// sets it with [context.WithTimeoutCause]).
	ErrHandlerTimeout = errors.New("mcp: handler timeout")
)

// CancelReason classifies a cancellation cause. Its String form is the label
// value telemetry uses.
type CancelReason uint8

// The cancel reasons, one per cause, plus None (not cancelled) and Other
// (cancelled by something else, such as the caller's context).
const (
	ReasonNone CancelReason = iota
	ReasonClientCancel
	ReasonTransportClose
	ReasonShutdown
	ReasonTimeout
	ReasonOther
)

var reasonNames = [...]string{"none", "client_cancel", "transport_close", "shutdown", "timeout", "other"}

// CancelReasons lists every reason that a cancelled context can have, in a
// stable order (for pre-creating telemetry series).
func CancelReasons() []CancelReason {
	return []CancelReason{ReasonClientCancel, ReasonTransportClose, ReasonShutdown, ReasonTimeout, ReasonOther}
}

func (r CancelReason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "other"
}

// CancelReasonOf returns the reason ctx was cancelled, or ReasonNone if it was
// not. A deadline without an explicit cause counts as a timeout.
func CancelReasonOf(ctx context.Context) CancelReason {
	if ctx.Err() == nil {
		return ReasonNone
	}
	return ReasonOfCause(context.Cause(ctx))
}

// ReasonOfCause classifies a cancellation cause (as returned by
// [context.Cause]). A nil cause is ReasonNone.
func ReasonOfCause(cause error) CancelReason {
	switch {
	case cause == nil:
		return ReasonNone
	case errors.Is(cause, ErrClientCancel):
		return ReasonClientCancel
	case errors.Is(cause, ErrTransportClose):
		return ReasonTransportClose
	case errors.Is(cause, ErrShutdown):
		return ReasonShutdown
	case errors.Is(cause, ErrHandlerTimeout), errors.Is(cause, context.DeadlineExceeded):
		return ReasonTimeout
	default:
		return ReasonOther
	}
}
