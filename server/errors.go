package server

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Error is a protocol error: it travels to the peer as a JSON-RPC error
// object. Handlers return one (see [NewError] and [Errorf]) to choose the
// code; any other error a handler returns is answered as [protocol.CodeInternal] with
// a generic message, so internal details never reach the client.
type Error struct {
	Code    protocol.Code
	Message string
	Data    json.RawMessage // optional; must be valid JSON
	err     error
}

// NewError returns an *Error with code c whose message is err's text and
// which unwraps to err.
func NewError(c protocol.Code, err error) *Error {
	return &Error{Code: c, Message: err.Error(), err: err}
}

// Errorf returns an *Error with code c and a formatted message. %w verbs
// wrap as in [fmt.Errorf].
func Errorf(c protocol.Code, format string, args ...any) *Error {
	return NewError(c, fmt.Errorf(format, args...))
}

func (e *Error) Error() string {
	return fmt.Sprintf("mcp error %d: %s", e.Code, e.Message)
}

// Unwrap returns the error e was made from, if any.
func (e *Error) Unwrap() error { return e.err }

// CodeOf returns the JSON-RPC code err will be answered with: the code of the
// first *Error in its chain, [protocol.CodeRequestTimeout] for a handler timeout, and
// [protocol.CodeInternal] for anything else. CodeOf(nil) is 0.
func CodeOf(err error) protocol.Code {
	if err == nil {
		return 0
	}
	if e, ok := errors.AsType[*Error](err); ok && e != nil {
		return e.Code
	}
	if errors.Is(err, ErrHandlerTimeout) {
		return protocol.CodeRequestTimeout
	}
	return protocol.CodeInternal
}

// wireError turns a handler's error into what the client sees.
func wireError(err error) *transport.Error {
	if e, ok := errors.AsType[*Error](err); ok && e != nil {
		return &transport.Error{Code: int64(e.Code), Message: e.Message, Data: e.Data}
	}
	if errors.Is(err, ErrHandlerTimeout) {
		return &transport.Error{Code: int64(protocol.CodeRequestTimeout), Message: "request timed out"}
	}
	return &transport.Error{Code: int64(protocol.CodeInternal), Message: "internal error"}
}

// Errors a handler sees when it calls the client (see [Session.Call]).
var (
	// ErrConnectionClosed: the session ended before the client answered.
	// The error also wraps the session's cancellation cause.
	ErrConnectionClosed = errors.New("mcp: connection closed")
	// ErrCapability: the client did not declare the capability the call needs.
	ErrCapability = errors.New("mcp: client lacks capability")
	// ErrNotInitialized: the client has not finished the initialize handshake.
	ErrNotInitialized = errors.New("mcp: session not initialized")
)
