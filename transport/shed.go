package transport

import (
	"time"

	"github.com/vigil-mcp/vigil/internal/overload"
)

// Shedder decides whether the process refuses a request at once because
// it is overloaded. Shed reports true for a request to refuse; it must be
// fast and safe for concurrent use. Transports ask it only for requests
// other than initialize, server/discover and ping: notifications (notifications/cancelled
// among them) and responses to the server's own requests are never shed.
type Shedder interface {
	Shed() bool
}

// DefaultShedTarget is the scheduling latency over which the shipped
// commands shed by default (their -overload-target): well above what a
// saturated but keeping-up process shows, well below a run queue of
// thousands of connections.
const DefaultShedTarget = time.Millisecond

// NewShedder returns a Shedder that sheds a share of the requests while
// the Go scheduler is saturated: while the median of the last three
// samples of the 90th percentile of the time runnable goroutines waited
// for a CPU (runtime/metrics /sched/latencies:seconds, sampled every
// 100 ms) is above target, it refuses a share in proportion to how far
// over (up to a tenth, at three times the target); shed requests are told
// to retry after 1 to 3 seconds, at random. Handlers that sleep or wait
// add no scheduling latency, so they are never shed. It starts no
// goroutine. For target <= 0 it returns nil, which the transports'
// WithShedder options take as "shed nothing".
func NewShedder(target time.Duration) Shedder {
	if target <= 0 {
		return nil
	}
	return overload.New(overload.Config{Target: target})
}
