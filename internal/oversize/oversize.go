// Package oversize is the error of a message that an MCP client connection
// dropped unread for being over its bound, the connection living on: the
// Err of the transport.DecodeError that its Read returns, the same for a
// process's standard output (the gateway's stdio upstreams) and for
// Streamable HTTP (streamable.Dial). The gateway fails the call it
// answered, refuses a request and drops a notification.
package oversize

import "fmt"

// Error is a message over the bound Limit that was dropped unread.
type Error struct {
	// Response is set when the message was the answer to a request of
	// ours (whose id is the DecodeError's); else it was a request of the
	// peer (with that id) or a notification (none).
	Response bool
	// Size is the message's size in bytes; 0 when it is only known to be
	// over Limit.
	Size int64
	// Limit is the bound, in bytes.
	Limit int
	// Frame is what Unwrap returns: transport.ErrFrameTooLarge, which a
	// package under internal/ cannot name.
	Frame error
}

func (e *Error) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("a message of %d bytes, over the bound of %d bytes", e.Size, e.Limit)
	}
	return fmt.Sprintf("a message over the bound of %d bytes", e.Limit)
}

// Unwrap returns Frame.
func (e *Error) Unwrap() error { return e.Frame }
