package overload

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/cputime"
)

// The defaults of a [Config]'s zero fields.
const (
	DefaultInterval = 100 * time.Millisecond
	DefaultMinAdmit = 0.9
)

// Window and Span shape the response to the delay. The share follows
// the median of the last Window intervals' delays, so that one interval's
// burst (a notification to ten thousand streams wakes as many goroutines
// at once) is not an overload. At that median's target the Limiter sheds
// nothing; at Span times the target over it, all it may (1 - MinAdmit);
// in between, in proportion.
const (
	Window = 3
	Span   = 1
)

// MinBusy is the share of its processors (GOMAXPROCS) a process must have
// used in an interval for the interval's delay to count: one that used
// less is not what keeps its requests waiting (a busy machine, a noisy
// neighbor), and refusing its clients would not make them wait less.
const MinBusy = 0.25

// DefaultMinWaiting is how many requests must wait for an interval's
// delay to count (Config.MinWaiting), by Little's law: the requests asked
// about per second times their mean delay. A handful of clients, however
// heavy their requests (eight 1 MiB echoes keep two CPUs busy for tens of
// milliseconds each), keep no more requests waiting than there are of
// them; refusing one of them sends it away for seconds so that the others
// wait a little less, and serves no more. Over DefaultMinWaiting, the
// wait is made by more clients than the CPUs keep up with. It is twice
// 32 clients, which keep at most 32 waiting; a larger one stops the
// shedding of 2,048 clients short of its target too (docs/perf/ROUNDS.md).
const DefaultMinWaiting = 64

// full is the admission threshold at which every request is admitted: a
// request is admitted when a random uint32 is below the threshold.
const full = uint64(1) << 32

// Config configures a [Limiter]. Only Target is required.
type Config struct {
	// Target is the delay (90th percentile over an interval) above which
	// the process is overloaded; it must be positive.
	Target time.Duration
	// Interval is how often the delay is read (DefaultInterval).
	Interval time.Duration
	// MinAdmit is the least share of requests admitted, in (0, 1]
	// (DefaultMinAdmit).
	MinAdmit float64
	// MinWaiting is how many requests must wait for an interval's delay
	// to count, positive (DefaultMinWaiting).
	MinWaiting float64
	// Now reads a monotonic clock; nil: time since New.
	Now func() time.Duration
	// Queued returns how long the request of ctx waited before the
	// process read it, false when it cannot tell; nil: the socket of the
	// connection ContextWithConn recorded in ctx (Linux).
	Queued func(ctx context.Context) (time.Duration, bool)
	// Sample returns the 90th percentile of the scheduling latency since
	// its previous call (0 when too few goroutines were scheduled), the
	// delay of an interval with fewer than MinQueued queueing delays;
	// nil: the runtime's.
	Sample func() time.Duration
	// CPU returns the CPU time the process has used, negative when it
	// cannot tell (every interval is then busy); nil: getrusage.
	CPU func() time.Duration
	// Rand returns a uniformly random uint32; nil: math/rand/v2.
	Rand func() uint32
}

// Limiter sheds a share of requests while the process is overloaded (see
// the package documentation). It is safe for concurrent use.
type Limiter struct {
	cfg       Config
	threshold atomic.Uint64         // admit when Rand() < threshold; full: admit all
	due       atomic.Int64          // Now() at which the next update is due
	measure   atomic.Int64          // Now() at which the next queueing delay is measured
	asked     atomic.Int64          // requests asked about this interval
	queued    delays                // this interval's queueing delays
	mu        sync.Mutex            // one update at a time; guards the fields below
	share     float64               // the share admitted, in [MinAdmit, 1]
	last      time.Duration         // Now() of the last update
	cpu       time.Duration         // CPU() at the last update
	recent    [Window]time.Duration // the last intervals' delays, the latest first
}

// New returns a Limiter that admits every request until it finds the
// process overloaded. It panics if cfg.Target is not positive.
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
	if !(cfg.MinWaiting > 0) {
		cfg.MinWaiting = DefaultMinWaiting
	}
	if cfg.Now == nil {
		start := time.Now()
		cfg.Now = func() time.Duration { return time.Since(start) }
	}
	if cfg.Queued == nil {
		cfg.Queued = connQueued
	}
	if cfg.Sample == nil {
		cfg.Sample = newSchedSampler().p90
	}
	if cfg.CPU == nil {
		cfg.CPU = cputime.Process
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Uint32
	}
	l := &Limiter{cfg: cfg, share: 1}
	l.threshold.Store(full)
	now := cfg.Now()
	l.last, l.cpu = now, cfg.CPU()
	l.due.Store(int64(now + cfg.Interval))
	return l
}

// Shed reports whether to refuse the request of ctx now because the
// process is overloaded. Every Interval/SamplesPerInterval it measures how
// long the request waited; when an interval is over, it updates the
// share admitted.
func (l *Limiter) Shed(ctx context.Context) bool {
	l.asked.Add(1)
	now := l.cfg.Now()
	if claim(&l.measure, now, l.cfg.Interval/SamplesPerInterval) {
		if d, ok := l.cfg.Queued(ctx); ok {
			l.queued.add(d)
		}
	}
	if claim(&l.due, now, l.cfg.Interval) {
		l.update(now)
	}
	t := l.threshold.Load()
	return t < full && uint64(l.cfg.Rand()) >= t
}

// claim reports whether now has reached the time at holds, moving it on
// to now+step: true for one caller of the moment, the others go on.
func claim(at *atomic.Int64, now, step time.Duration) bool {
	t := at.Load()
	return int64(now) >= t && at.CompareAndSwap(t, int64(now+step))
}

// Share returns the share of requests admitted now, in [MinAdmit, 1].
func (l *Limiter) Share() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.share
}

// update reads the interval's delay and sets the share admitted from the
// median of the recent intervals'.
func (l *Limiter) update(now time.Duration) {
	if !l.mu.TryLock() {
		return // a slow update still runs: this interval is its
	}
	defer l.mu.Unlock()
	if now-l.last > Window*l.cfg.Interval {
		l.recent = [Window]time.Duration{} // no request for a while: calm
	}
	delay := l.delay(now)
	l.last = now
	copy(l.recent[1:], l.recent[:])
	l.recent[0] = delay
	over := float64(median(l.recent)-l.cfg.Target) / float64(Span*l.cfg.Target)
	l.share = 1 - (1-l.cfg.MinAdmit)*min(max(over, 0), 1)
	if l.share >= 1 {
		l.threshold.Store(full)
		return
	}
	l.threshold.Store(uint64(l.share * float64(full)))
}

// delay returns the delay of the interval from the last update to now:
// the 90th percentile of its queueing delays, or with fewer than MinQueued
// of them the scheduling latency's; 0 (calm) when the process used less
// than MinBusy of its processors, or when fewer than MinWaiting requests
// waited (by Little's law, from the queueing delays' mean: their 90th
// percentile may be several times it).
func (l *Limiter) delay(now time.Duration) time.Duration {
	queued, mean, n := l.queued.take()
	delay := l.cfg.Sample() // read every interval: its next delta is this interval's
	wait := delay
	if n >= MinQueued {
		delay, wait = queued, mean
	}
	asked, cpu := l.asked.Swap(0), l.cfg.CPU()
	used, elapsed := cpu-l.cpu, now-l.last
	l.cpu = cpu
	if elapsed <= 0 {
		return 0
	}
	waiting := float64(asked) / elapsed.Seconds() * wait.Seconds() // Little's law
	busy := cpu < 0 || float64(used) >= MinBusy*float64(runtime.GOMAXPROCS(0))*float64(elapsed)
	if !busy || waiting < l.cfg.MinWaiting {
		return 0
	}
	return delay
}

// median returns the median of the samples.
func median(samples [Window]time.Duration) time.Duration {
	slices.Sort(samples[:])
	return samples[Window/2]
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
