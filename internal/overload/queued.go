package overload

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/connstate"
)

// SamplesPerInterval is how many requests' queueing delays a Limiter
// measures in an interval, at most: one every Interval/SamplesPerInterval.
const SamplesPerInterval = 32

// MinQueued is how many queueing delays an interval needs for their 90th
// percentile to be its signal; with fewer (a transport that cannot see
// them, or under MinQueued requests in the interval), the scheduling
// latency is.
const MinQueued = 8

// connQueued returns how long ago the last bytes arrived on the
// connection recorded in ctx (connstate.With, which
// streamable.ConnContext calls), which for a request just read is how long
// it waited to be read; false without one, or where the socket cannot
// tell (see socketIdle).
func connQueued(ctx context.Context) (time.Duration, bool) {
	st := connstate.From(ctx)
	if st == nil || st.Conn() == nil {
		return 0, false
	}
	return socketIdle(st.Conn())
}

// delays holds the queueing delays measured in one interval, up to twice
// SamplesPerInterval (a late interval's, the most measured before its
// update takes them).
type delays struct {
	n atomic.Int32
	d [2 * SamplesPerInterval]atomic.Int64
}

// add keeps d, unless the interval has as many as it holds.
func (q *delays) add(d time.Duration) {
	if i := q.n.Add(1) - 1; int(i) < len(q.d) {
		q.d[i].Store(int64(d))
	}
}

// take returns the 90th percentile and the mean of the delays kept since
// the last take and how many there were, and forgets them. A delay added
// while it runs goes to this interval or the next.
func (q *delays) take() (p90, mean time.Duration, n int) {
	n = min(int(q.n.Swap(0)), len(q.d))
	if n == 0 {
		return 0, 0, 0
	}
	var buf [len(q.d)]time.Duration
	var sum time.Duration
	for i := range n {
		buf[i] = time.Duration(q.d[i].Load())
		sum += buf[i]
	}
	kept := buf[:n]
	slices.Sort(kept)
	return kept[(n*9+9)/10-1], sum / time.Duration(n), n // the ceil(0.9n)-th
}
