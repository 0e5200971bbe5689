package streamable

import (
	"context"
	"net"

	"github.com/vigil-mcp/vigil/internal/connstate"
)

// ConnContext is the ConnContext function for the http.Server of an
// Endpoint: it records c in ctx, once per connection, for what the module
// reads of it. The Shedder of [transport.NewShedder] reads, from c's
// socket, how long each request waited before the server read it (on
// Linux, the time since the socket last received data): that wait, which
// grows with the requests queued ahead in the kernel and the Go scheduler,
// is what it keeps under its target (without ConnContext it follows the
// scheduler's latency alone). The SERVER spans of the middleware package
// name the client by c's address (client.address, client.port) and HTTP
// version, never by a header a client writes; and package oauth's
// verifiers remember the last token verified on c, recognizing it again
// without hashing it, and keep one address from taking every call to the
// authorization server. Chain it with another ConnContext by calling one
// on the other's result.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return connstate.With(ctx, c)
}
