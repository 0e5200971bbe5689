package streamable

import (
	"github.com/vigil-mcp/vigil/internal/oversize"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// tooLarge returns the error a client connection's Read returns for a
// message over limit bytes that it dropped unread, the connection living
// on: the answer to the request id when response is set.
func tooLarge(response bool, id transport.ID, limit int) error {
	return &transport.DecodeError{Code: protocol.CodeInvalidRequest, ID: id, Err: &oversize.Error{Response: response, Limit: limit, Frame: transport.ErrFrameTooLarge}}
}
