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
// to be read, at the 90th percentile, mean more clients than the CPUs
// keep up with. An MCP call is a model's tool call, which takes a model's
// turn of seconds: a queue of tens of milliseconds costs it nothing, and
// hundreds of keep-alive clients on two cores, which a plain handler
// serves at a p99 of 15 to 20 ms, are served without a refusal.
const DefaultShedTarget = 40 * time.Millisecond

// NewShedder returns a Shedder that sheds a share of the requests while
// they queue: while the median of the last three 100 ms intervals' delays
// is above target, with the process using at least a quarter of its
// processors and, over those intervals, four fifths of the most it used
// lately (so that shedding never leaves the CPUs idle), and more than 64
// requests waiting (the requests per second times their mean wait), the
// share it refuses grows each interval by how far over (a quarter of a
// tenth at twice the target), up to a tenth, and falls as the delay drops
// under the target, to nothing at once when the CPUs idle: the delay
// settles at the target. Shed requests are told to retry after the time
// the queue takes to drain (the mean wait, in whole seconds: 1 to 3).
// Over streamable HTTP the share is refused from the callers sending the
// most requests: a caller sending under half the mean share is not
// refused, the others in proportion to their share, so that a caller
// within its quotas cannot have another's requests refused.
// An interval's delay is the 90th percentile of how long its requests
// waited to be read, measured on their connections' sockets (the
// http.Server's ConnContext must be streamable.ConnContext; on Linux);
// without that (stdio, another OS), the 90th percentile of the time
// runnable goroutines waited for a CPU (runtime/metrics
// /sched/latencies:seconds). A handler that sleeps or waits adds to
// neither, so slow calls are never shed. It starts no goroutine. For
// target <= 0 it returns nil, which server.WithShedder takes as "shed
// nothing".
func NewShedder(target time.Duration) Shedder {
	if target <= 0 {
		return nil
	}
	return overload.New(overload.Config{Target: target})
}
