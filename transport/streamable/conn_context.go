package streamable

import (
	"context"
	"net"

	"github.com/vigil-mcp/vigil/internal/overload"
)

// ConnContext is a ConnContext function for the http.Server of an
// Endpoint: it records c in ctx, so that the Shedder of
// [transport.NewShedder] reads, from c's socket, how long each request
// waited before the server read it (on Linux, the time since the socket
// last received data). That wait, which grows with the requests queued
// ahead in the kernel and the Go scheduler, is what the Shedder keeps
// under its target; without ConnContext it follows the scheduler's
// latency alone, which misses the requests still queued in the kernel.
// Chain it with another ConnContext by calling one on the other's result.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return overload.ContextWithConn(ctx, c)
}
