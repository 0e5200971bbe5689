package overload

import (
	"math"
	"math/rand/v2"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The defaults of a [Config]'s zero fields.
const (
	DefaultInterval = 100 * time.Millisecond
	DefaultMinAdmit = 0.9
)

// Window and Span shape the response to the latency. The share follows
// the median of the last Window samples, so that one interval's burst (a
// notification to ten thousand streams wakes as many goroutines at once)
// is not an overload. At that median's target the Limiter sheds nothing;
// at Span times the target over it, all it may (1 - MinAdmit); in
// between, in proportion.
const (
	Window = 3
	Span   = 2
)

// full is the admission threshold at which every request is admitted: a
// request is admitted when a random uint32 is below the threshold.
const full = uint64(1) << 32

// Config configures a [Limiter]. Only Target is required.
type Config struct {
	// Target is the scheduling latency (90th percentile over an interval)
	// above which the process is overloaded; it must be positive.
	Target time.Duration
	// Interval is how often the latency is sampled (DefaultInterval).
	Interval time.Duration
	// MinAdmit is the least share of requests admitted, in (0, 1]
	// (DefaultMinAdmit).
	MinAdmit float64
	// Now reads a monotonic clock; nil: time since New.
	Now func() time.Duration
	// Sample returns the 90th percentile of the scheduling latency since
	// its previous call (0 when nothing was scheduled); nil: the runtime's.
	Sample func() time.Duration
	// Rand returns a uniformly random uint32; nil: math/rand/v2.
	Rand func() uint32
}

// Limiter sheds a share of requests while the process is overloaded (see
// the package documentation). It is safe for concurrent use.
type Limiter struct {
	cfg       Config
	threshold atomic.Uint64         // admit when Rand() < threshold; full: admit all
	due       atomic.Int64          // Now() at which the next sample is due
	mu        sync.Mutex            // one update at a time; guards the fields below
	share     float64               // the share admitted, in [MinAdmit, 1]
	last      time.Duration         // Now() of the last sample
	recent    [Window]time.Duration // the last samples, the latest first
}

// New returns a Limiter that admits every request until it samples an
// overload. It panics if cfg.Target is not positive.
func New(cfg Config) *Limiter {
	if cfg.Target <= 0 {
		panic("overload: Target must be positive")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if !(cfg.MinAdmit > 0 && cfg.MinAdmit <= 1) {
		cfg.MinAdmit = DefaultMinAdmit
	}
	if cfg.Now == nil {
		start := time.Now()
		cfg.Now = func() time.Duration { return time.Since(start) }
	}
	if cfg.Sample == nil {
		cfg.Sample = newSchedSampler().p90
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Uint32
	}
	l := &Limiter{cfg: cfg, share: 1}
	l.threshold.Store(full)
	now := cfg.Now()
	l.last = now
	l.due.Store(int64(now + cfg.Interval))
	return l
}

// Shed reports whether to refuse one request now because the process is
// overloaded; it samples the latency when an interval is over.
func (l *Limiter) Shed() bool {
	now := l.cfg.Now()
	if due := l.due.Load(); int64(now) >= due && l.due.CompareAndSwap(due, int64(now+l.cfg.Interval)) {
		l.update(now)
	}
	t := l.threshold.Load()
	return t < full && uint64(l.cfg.Rand()) >= t
}

// Share returns the share of requests admitted now, in [MinAdmit, 1].
func (l *Limiter) Share() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.share
}

// update samples the latency and sets the share admitted from the median
// of the recent samples.
func (l *Limiter) update(now time.Duration) {
	if !l.mu.TryLock() {
		return // a slow update still runs: this interval is its
	}
	defer l.mu.Unlock()
	if now-l.last > Window*l.cfg.Interval {
		l.recent = [Window]time.Duration{} // no request to sample for a while: calm
	}
	l.last = now
	copy(l.recent[1:], l.recent[:])
	l.recent[0] = l.cfg.Sample()
	over := float64(median(l.recent)-l.cfg.Target) / float64(Span*l.cfg.Target)
	l.share = 1 - (1-l.cfg.MinAdmit)*min(max(over, 0), 1)
	if l.share >= 1 {
		l.threshold.Store(full)
		return
	}
	l.threshold.Store(uint64(l.share * float64(full)))
}

// median returns the median of the samples.
func median(samples [Window]time.Duration) time.Duration {
	slices.Sort(samples[:])
	return samples[Window/2]
}

// schedSampler reads the runtime's scheduling latency histogram and
// returns the 90th percentile of what it counted since the previous read.
type schedSampler struct {
	s    []metrics.Sample
	prev []uint64
}

const schedLatencies = "/sched/latencies:seconds"

// minScheduled is how many goroutines must have been scheduled in an
// interval for its latency to mean overload: a process that schedules
// fewer is not loaded, whatever delays the operating system gives its
// few wake-ups (a busy test machine, a noisy neighbor), and sheds
// nothing.
const minScheduled = 1000

func newSchedSampler() *schedSampler {
	r := &schedSampler{s: []metrics.Sample{{Name: schedLatencies}}}
	r.p90() // the first read is the baseline
	return r
}

// p90 returns the 90th percentile of the latencies counted since the last
// call, rounded up to its bucket's upper bound; 0 when fewer than
// minScheduled were counted or the runtime lacks the metric.
func (r *schedSampler) p90() time.Duration {
	metrics.Read(r.s)
	if r.s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := r.s[0].Value.Float64Histogram()
	if len(r.prev) != len(h.Counts) {
		r.prev = append(r.prev[:0], h.Counts...)
		return 0
	}
	var total uint64
	for i, c := range h.Counts {
		total += c - r.prev[i]
	}
	var p90 time.Duration
	if total >= minScheduled {
		p90 = quantile(h.Counts, r.prev, h.Buckets, total)
	}
	copy(r.prev, h.Counts)
	return p90
}

// quantile returns the upper bound of the bucket holding the 90th
// percentile of the counts in counts minus prev (total of them); buckets
// has one boundary more than counts.
func quantile(counts, prev []uint64, buckets []float64, total uint64) time.Duration {
	rank := (total*9 + 9) / 10 // ceil(0.9 * total)
	var seen uint64
	for i, c := range counts {
		if seen += c - prev[i]; seen >= rank {
			upper := buckets[i+1]
			if math.IsInf(upper, 1) {
				upper = buckets[i]
			}
			return time.Duration(upper * float64(time.Second))
		}
	}
	return 0
}

// Exempt reports whether a request of method is never shed: initialize,
// server/discover and ping open or check a connection, and refusing them
// makes clients reconnect, which costs more than serving them.
func Exempt(method string) bool {
	return method == "initialize" || method == "server/discover" || method == "ping"
}

// MaxRetryAfter is the longest wait, in seconds, a shed request's client
// is told (see [RetryAfter]).
const MaxRetryAfter = 3

// RetryAfter returns how long, in seconds, a shed request's client is told
// to wait (Retry-After), from 1 to MaxRetryAfter at random, and the data
// of its busy error, which says the same: the clients one overload sends
// away come back spread over those seconds, not all in the same one, to
// overload the process again together.
func RetryAfter() (seconds int, data string) {
	switch rand.IntN(MaxRetryAfter) {
	case 0:
		return 1, `{"retryAfterSeconds":1}`
	case 1:
		return 2, `{"retryAfterSeconds":2}`
	default:
		return 3, `{"retryAfterSeconds":3}`
	}
}
