package streamable

import (
	"fmt"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// oversize is the Err of the [transport.DecodeError] a client
// connection's Read returns for a message over MaxMessageBytes that it
// dropped unread, the connection living on.
type oversize struct {
	response bool // the answer to our request ID; else the server's request ID, or a notification's
	max      int
}

func (o *oversize) Error() string {
	return fmt.Sprintf("a message over the bound of %d bytes", o.max)
}

func (*oversize) Unwrap() error { return transport.ErrFrameTooLarge }

// Oversize returns what is known of the message: whether it answered a
// request, its size in bytes (0: unknown), and the bound. It is the hook
// of Vigil's gateway, which fails the call so answered.
func (o *oversize) Oversize() (response bool, size int64, limit int) {
	return o.response, 0, o.max
}

// tooLarge returns the error Read returns for a message over limit bytes
// that answered the request id when response is set.
func tooLarge(response bool, id transport.ID, limit int) error {
	return &transport.DecodeError{Code: protocol.CodeInvalidRequest, ID: id, Err: &oversize{response: response, max: limit}}
}
