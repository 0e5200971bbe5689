package transport

import (
	"context"
	"time"

	"github.com/vigil-mcp/vigil/internal/overload"
)

// Shedder decides whether the process refuses a request at once because
// it is overloaded. Shed reports true for the request of ctx (its
// arrival's context: for HTTP, the request's) to refuse; it must be fast
// and safe for concurrent use. Transports ask it only for requests
// other than initialize, server/discover and ping: notifications (notifications/cancelled
// among them) and responses to the server's own requests are never shed.
type Shedder interface {
	Shed(ctx context.Context) bool
}

// DefaultShedTarget is the delay over which the shipped commands shed by
// default (their -overload-target): requests that wait longer than this
// to be read, at the 90th percentile, while more than 256 wait, mean
// more clients than the CPUs keep up with. An MCP call is a model's tool
// call, which takes a model's turn of seconds: a queue of a few hundred
// requests costs it nothing: 256 keep-alive clients on two cores are
// served without a refusal, 2,048 are shed (docs/limits.md).
const DefaultShedTarget = 10 * time.Millisecond

// NewShedder returns a Shedder that sheds a share of the requests, up to
// a tenth, while they wait to be read longer than target (the median of
// three 100 ms intervals' 90th percentiles, measured on their sockets:
// the http.Server's ConnContext must be streamable.ConnContext; without
// one, the scheduler's latency) with the CPUs busy and over 256 waiting
// (once shedding, down to 64). The share moves with the delay's excess
// each interval, so that the delay settles at the target. The callers
// sending the most requests are refused first; refusals say Retry-After
// 1 to 3 s, spread at random. Slow handlers are never shed. A process
// whose GOMAXPROCS was lowered since (cmd/vigil runs a quiet process on
// one P) sheds nothing, and gets it back at its first busy interval. It
// starts no goroutine; docs/limits.md has the details. For target <= 0
// it returns nil, which server.WithShedder takes as "shed nothing".
func NewShedder(target time.Duration) Shedder {
	if target <= 0 {
		return nil
	}
	return overload.New(overload.Config{Target: target})
}
