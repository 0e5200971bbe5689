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

// NewShedder returns a Shedder that sheds a share of the requests while
// the Go scheduler is saturated: while the 90th percentile of the time
// runnable goroutines waited for a CPU (runtime/metrics
// /sched/latencies:seconds, sampled every 100 ms) is above target, the
// share admitted shrinks by a tenth per interval (down to a half); below
// it, it grows back by 5% per interval until nothing is shed. Handlers that
// sleep or wait add no scheduling latency, so they are never shed. It
// starts no goroutine. For target <= 0 it returns nil, which the
// transports' WithShedder options take as "shed nothing".
func NewShedder(target time.Duration) Shedder {
	if target <= 0 {
		return nil
	}
	return overload.New(overload.Config{Target: target})
}
