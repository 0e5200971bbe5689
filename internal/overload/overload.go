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

// Window and Gain shape the response to the delay. The share refused
// follows the median of the last Window intervals' delays, so that one
// interval's burst (a notification to ten thousand streams wakes as many
// goroutines at once) is not an overload. While that median is over the
// target, the share refused grows each interval by Gain times the most
// the Limiter may refuse (1 - MinAdmit) times how far over it is, in
// targets (a tenth of the most at twice the target, all of it at eleven
// times); under the target it falls the same way; when the interval left
// the CPUs idle (FullBusy) or too few waited (MinWaiting), it is nothing
// at once. The delay then
// settles at the target, whatever the load. A larger Gain overshoots:
// the clients sent away come back together, and the delay swings around
// the target (TestClosedLoopSettles).
const (
	Window = 3
	Gain   = 0.1
)

// MinBusy is the share of its processors (GOMAXPROCS) a process must have
// used in an interval for the interval's delay to count: one that used
// less is not what keeps its requests waiting (a busy machine, a noisy
// neighbor), and refusing its clients would not make them wait less.
const MinBusy = 0.25

// WithheldBusy is the share of its Ps that a process running on fewer
// than it was given (see [Limiter]) must use in an interval for the
// Limiter to give it back the Ps it had at New: half of one P in one
// interval is a burst, not rest.
const WithheldBusy = 0.5

// FullBusy is the share of the most CPU the process used lately (its
// peak) that it must use for an interval's delay to count, both averaged
// over the last Window intervals, which a scheduler's noise would
// otherwise swing. Clients that honor Retry-After stay away: a share
// refused that sends away more of them than the queue needed leaves the
// CPUs idle, which the next intervals see as calm, and the share falls
// until the clients are back and the CPUs as busy as they get. The peak,
// not GOMAXPROCS, is the measure of busy, since a process may never get
// all of its processors (a CPU quota, other processes on the machine);
// it loses peakDecay of itself each interval, so that a process that
// lost processors finds its new peak within seconds (a 0.95 per 100 ms
// halves it in 1.4 s).
const (
	FullBusy  = 0.8
	peakDecay = 0.95
)

// DefaultMinWaiting is how many requests must wait for an interval's
// delay to count (Config.MinWaiting), by Little's law: the requests asked
// about per second times their mean delay. A handful of clients, however
// heavy their requests (eight 1 MiB echoes keep two CPUs busy for tens of
// milliseconds each), keep no more requests waiting than there are of
// them; refusing one of them sends it away for seconds so that the others
// wait a little less, and serves no more. Nor do a few hundred: 256
// keep-alive clients, which keep at most 256 waiting, make a queue a
// plain net/http handler serves within what an MCP call absorbs, and
// refusing some of them only sends them away. Over DefaultMinWaiting,
// the wait is made by more clients than the CPUs keep up with
// (docs/limits.md has the figures).
const DefaultMinWaiting = 256

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
	// connection connstate.With recorded in ctx (Linux).
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
	// Jitter returns a uniformly random uint32 for the spread of
	// Retry-After (retryAfter), apart from Rand so that tests can count
	// admissions from Rand's values; nil: math/rand/v2.
	Jitter func() uint32
}

// Limiter sheds a share of requests while the process is overloaded (see
// the package documentation). It is safe for concurrent use. While the
// process runs on fewer Ps than GOMAXPROCS was at New (a follower of the
// load put it on one while quiet), it sheds nothing, and at the first
// interval that keeps half of the Ps it has busy (WithheldBusy) it sets
// GOMAXPROCS back to its value at New: the one time a Limiter changes it.
type Limiter struct {
	cfg       Config
	given     int                    // GOMAXPROCS at New
	threshold atomic.Uint64          // admit when Rand() < threshold; full: admit all
	due       atomic.Int64           // Now() at which the next update is due
	measure   atomic.Int64           // Now() at which the next queueing delay is measured
	asked     atomic.Int64           // requests asked about this interval
	calm      atomic.Bool            // the last interval used under MinBusy of the processors: no queueing delay is measured
	queued    delays                 // this interval's queueing delays
	callers   noted                  // this interval's callers (fair.go)
	shares    atomic.Pointer[shares] // the last interval's callers' shares; nil: shed uniformly
	retry     atomic.Int64           // Retry-After of a refusal now, in seconds
	mu        sync.Mutex             // one update at a time; guards the fields below
	share     float64                // the share admitted, in [MinAdmit, 1]
	last      time.Duration          // Now() of the last update
	cpu       time.Duration          // CPU() at the last update
	idle      bool                   // the last interval left the CPUs idle (busy)
	drained   bool                   // too few requests waited in the last interval (MinWaiting)
	procs     [Window]float64        // the processors used in the last intervals, the latest first
	peak      float64                // the most of their mean lately (FullBusy)
	recent    [Window]time.Duration  // the last intervals' delays, the latest first
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
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Uint32
	}
	l := &Limiter{cfg: cfg, share: 1, given: runtime.GOMAXPROCS(0)}
	l.threshold.Store(full)
	l.retry.Store(1)
	now := cfg.Now()
	l.last, l.cpu = now, cfg.CPU()
	l.due.Store(int64(now + cfg.Interval))
	return l
}

// Shed reports whether to refuse the request of ctx now because the
// process is overloaded, every request alike: [Limiter.ShedCaller] with
// no caller known.
func (l *Limiter) Shed(ctx context.Context) bool {
	return l.ShedCaller(ctx, "") > 0
}

// ShedCaller returns 0 to admit the request of ctx, or the Retry-After,
// in seconds, of its refusal because the process is overloaded. caller
// names whom the request is from (the quotas' caller), "" when unknown:
// while requests are shed, those of callers that send under half the
// mean share of the requests are admitted, and the others refused in
// proportion to their share (fair.go), so that a caller within its
// quotas cannot have another's requests refused. Every
// Interval/SamplesPerInterval it measures how long the request waited and
// notes its caller; when an interval is over, it updates the share
// admitted.
func (l *Limiter) ShedCaller(ctx context.Context, caller string) (retryAfter int) {
	l.asked.Add(1)
	now := l.cfg.Now()
	// A process that was not busy in the last interval sheds nothing at
	// the end of this one unless it becomes busy, and then its
	// scheduling latency stands in for the queueing delays (delay): at a
	// few requests an interval, measuring each one's (a getsockopt) is a
	// system call per request for nothing.
	if !l.calm.Load() && claim(&l.measure, now, l.cfg.Interval/SamplesPerInterval) {
		if d, ok := l.cfg.Queued(ctx); ok {
			l.queued.add(d)
		}
		l.callers.add(caller)
	}
	if claim(&l.due, now, l.cfg.Interval) {
		l.update(now)
	}
	t := l.threshold.Load()
	if t >= full || !l.refuse(t, caller) {
		return 0
	}
	return l.retryAfter()
}

// retryAfter returns the Retry-After of a refusal now: the queue's drain
// time (retrySeconds) plus 0 to MaxRetryAfter-1 seconds at random, at most
// MaxRetryAfter. The clients refused within a second then come back
// spread over the next three instead of together: with the drain time
// alone (1 s for cheap requests), 2,048 clients honoring it came back in
// waves, and the p99 of the requests admitted stayed at 125-160 ms
// (make bench-scale), over the 100 ms the shedder is for.
func (l *Limiter) retryAfter() int {
	return int(min(l.retry.Load()+int64(l.cfg.Jitter()%MaxRetryAfter), MaxRetryAfter))
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

// update reads the interval's delay and moves the share admitted by the
// median of the recent intervals' (see Gain).
func (l *Limiter) update(now time.Duration) {
	if !l.mu.TryLock() {
		return // a slow update still runs: this interval is its
	}
	defer l.mu.Unlock()
	if now-l.last > Window*l.cfg.Interval {
		l.recent = [Window]time.Duration{} // no request for a while: calm
		l.procs = [Window]float64{}
		l.share = 1
	}
	delay := l.delay(now)
	l.last = now
	copy(l.recent[1:], l.recent[:])
	l.recent[0] = delay
	most, refused := 1-l.cfg.MinAdmit, 0.0
	if !l.idle && !l.drained {
		over := float64(median(l.recent)-l.cfg.Target) / float64(l.cfg.Target)
		refused = min(max(1-l.share+most*min(max(Gain*over, -1), 1), 0), most)
	}
	l.share = 1 - refused
	l.shares.Store(l.callers.take())
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
	l.retry.Store(retrySeconds(wait))
	asked, cpu := l.asked.Swap(0), l.cfg.CPU()
	used, elapsed := cpu-l.cpu, now-l.last
	l.cpu = cpu
	if elapsed <= 0 {
		return 0
	}
	waiting := float64(asked) / elapsed.Seconds() * wait.Seconds() // Little's law
	l.idle = !l.busy(used, elapsed)
	l.calm.Store(l.idle)
	// Shedding starts with over MinWaiting waiting and goes on down to a
	// quarter of it: the clients it sends away are what brings the
	// number waiting down, and stopping as soon as it fell under
	// MinWaiting would bring them back at once. Under a quarter the
	// queue is gone, and shedding stops at once (update): a share that
	// fell by Gain each interval went on sending clients away for
	// seconds from a queue already served, and left the CPUs short of
	// work until they came back.
	minWaiting := l.cfg.MinWaiting
	if l.share < 1 {
		minWaiting /= 4
	}
	l.drained = waiting < minWaiting
	if l.idle || l.drained {
		return 0
	}
	return delay
}

// busy reports whether the process, which used used of CPU time in
// elapsed, keeps its CPUs as busy as they get: at least MinBusy of its
// processors in the interval, and over the last Window intervals
// FullBusy of its peak. The CPU time unknown (negative), every interval
// is busy.
func (l *Limiter) busy(used, elapsed time.Duration) bool {
	if procs := runtime.GOMAXPROCS(0); procs < l.given {
		// Ps withheld since New (a follower of the load, such as
		// cmd/vigil's, ran the quiet process on one): what its requests
		// wait for is its Ps, not fewer clients. An interval that kept
		// the Ps it has busy is a burst, and gets them back at once,
		// without waiting for the follower's interval: the shedding
		// then starts from the next interval, as in a process that
		// kept its Ps.
		if used >= 0 && float64(used) >= WithheldBusy*float64(procs)*float64(elapsed) {
			runtime.GOMAXPROCS(l.given)
		}
		return false
	}
	if used < 0 || l.cpu < 0 {
		return true
	}
	procs := float64(used) / float64(elapsed)
	copy(l.procs[1:], l.procs[:])
	l.procs[0] = procs
	var mean float64
	for _, p := range l.procs {
		mean += p / Window
	}
	l.peak = max(mean, l.peak*peakDecay)
	return procs >= MinBusy*float64(runtime.GOMAXPROCS(0)) && mean >= FullBusy*l.peak
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
// is told (see [Limiter.ShedCaller]).
const MaxRetryAfter = 3

// retrySeconds returns the Retry-After of a refusal when requests wait
// wait on average: by Little's law, how long the queue takes to drain at
// the rate it is served, which is how soon there is room for the client
// sent away; in whole seconds (all Retry-After can say), from 1 to
// MaxRetryAfter. A longer wait would leave the CPUs idle once the queue
// is served; clients refused over an interval come back spread over as
// long an interval (a Retry-After that grew while the share refused was
// at its most sent every client away at once in TestClosedLoopSettles'
// simulation, and left the CPUs idle).
func retrySeconds(wait time.Duration) int64 {
	return min(max(int64((wait+time.Second-1)/time.Second), 1), MaxRetryAfter)
}

// RetryData returns the data of a shed request's busy error, which says
// its Retry-After (from 1 to MaxRetryAfter seconds, as ShedCaller
// returns; others are taken as the nearest) as its header does, without
// an allocation.
func RetryData(seconds int) string {
	switch {
	case seconds <= 1:
		return `{"retryAfterSeconds":1}`
	case seconds == 2:
		return `{"retryAfterSeconds":2}`
	default:
		return `{"retryAfterSeconds":3}`
	}
}
