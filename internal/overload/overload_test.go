package overload

import (
	"context"
	"encoding/json"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const target = 5 * time.Millisecond

// fake is a Limiter's world: a clock moved by hand, the scheduling
// latency its next sample reports, the queueing delay its requests report
// (none while queued is negative), the CPU time the process used (unknown,
// so every interval busy, while cpu is negative), and a random source that
// sweeps [0, 2^32) evenly.
type fake struct {
	now      atomic.Int64
	latency  atomic.Int64
	samples  atomic.Int64
	queued   atomic.Int64
	measured atomic.Int64
	skewed   atomic.Bool // then only every fifth measure reads queued, the others a fiftieth of it
	cpu      atomic.Int64
	next     atomic.Uint32
}

func newFake(t *testing.T) (*fake, *Limiter) {
	t.Helper()
	return newFakeWaiting(t, 1e-9) // any request waiting is enough
}

// newFakeWaiting is newFake with Config.MinWaiting minWaiting.
func newFakeWaiting(t *testing.T, minWaiting float64) (*fake, *Limiter) {
	t.Helper()
	f := &fake{}
	f.queued.Store(-1)
	f.cpu.Store(-1)
	l := New(Config{
		Target:     target,
		MinWaiting: minWaiting,
		Now:        func() time.Duration { return time.Duration(f.now.Load()) },
		Queued: func(context.Context) (time.Duration, bool) {
			m := f.measured.Add(1)
			d := f.queued.Load()
			if f.skewed.Load() && m%5 != 0 {
				d /= 50
			}
			return time.Duration(d), d >= 0
		},
		Sample: func() time.Duration { f.samples.Add(1); return time.Duration(f.latency.Load()) },
		CPU:    func() time.Duration { return time.Duration(f.cpu.Load()) },
		Rand:   func() uint32 { return f.next.Add(1<<32/64+1) - 1 }, // 64 evenly spread values per lap
	})
	return f, l
}

// interval moves the clock one interval on, has the latency be latency,
// and returns how many of n requests the Limiter then sheds.
func (f *fake) interval(l *Limiter, latency time.Duration, n int) int {
	f.latency.Store(int64(latency))
	f.now.Add(int64(DefaultInterval))
	return shedOf(l, n)
}

func TestCalmShedsNothing(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	for range 50 {
		assert.Zero(t, f.interval(l, target, 1000), "at the target, nothing is shed")
	}
	assert.InDelta(t, 1.0, l.Share(), 0)
	assert.Equal(t, int64(50), f.samples.Load(), "one sample per interval, however many requests")
}

// shedOf counts how many of n requests l sheds now, in this interval.
func shedOf(l *Limiter, n int) int {
	shed := 0
	for range n {
		if l.Shed(context.Background()) {
			shed++
		}
	}
	return shed
}

// The share refused grows while the latency is over the target, by Gain
// times the most the Limiter may refuse per target over, up to that
// most; holds at the target; and refusals are that share of the
// requests.
func TestShareClimbsWhileOverTheTarget(t *testing.T) {
	t.Parallel()
	most := 1 - DefaultMinAdmit
	for _, tc := range []struct {
		latency time.Duration
		step    float64 // the share refused added each interval
	}{
		{target, 0},
		{2 * target, Gain * most},
		{3 * target, 2 * Gain * most},
		{100 * target, most},
	} {
		f, l := newFake(t)
		f.interval(l, tc.latency, 1) // the median is over from the second interval on
		for i := 1; i <= 3; i++ {
			f.interval(l, tc.latency, 1)
			refused := min(float64(i)*tc.step, most)
			assert.InDelta(t, 1-refused, l.Share(), 1e-9, "latency %v, interval %d", tc.latency, i)
			assert.InDelta(t, refused*6400, float64(shedOf(l, 6400)), 100, "latency %v", tc.latency)
		}
	}
}

// overloadFor drives l to the most it sheds with intervals far over the
// target.
func overloadFor(f *fake, l *Limiter) {
	for range Window {
		f.interval(l, 10*target, 1)
	}
}

// A burst over the target shorter than a majority of the window, however
// often and however far over, sheds nothing.
func TestBurstsShedNothing(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	for range 20 {
		for range Window / 2 {
			assert.Zero(t, f.interval(l, 100*target, 640))
		}
		for range Window - Window/2 {
			assert.Zero(t, f.interval(l, target/2, 640))
		}
	}
	assert.InDelta(t, 1.0, l.Share(), 0)
}

// Once a majority of the window is back under the target, the share
// refused falls as it grew; calm (under a quarter of MinWaiting waiting:
// TestShedsOnDownToAQuarterOfMinWaiting) or with the CPUs idle
// (TestSheddingNeverIdlesTheCPUs), it is nothing at once.
func TestRecoveryFollowsTheLatency(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	overloadFor(f, l)
	require.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9)
	for range Window / 2 {
		f.interval(l, target/2, 1)
		assert.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9, "the median is still over")
	}
	f.interval(l, target/2, 1)
	assert.InDelta(t, DefaultMinAdmit+Gain*(1-DefaultMinAdmit)/2, l.Share(), 1e-9, "half the target under it: Gain/2 of the most less")
	for range int(2 / Gain) {
		f.interval(l, target/2, 1)
	}
	assert.InDelta(t, 1.0, l.Share(), 0, "back to admitting all")
	overloadFor(f, l)
	require.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9)
	f.interval(l, 0, 1)
	assert.InDelta(t, 1.0, l.Share(), 0, "calm (none waiting): nothing refused at once")
}

// After a quiet spell with no request to sample, the window holds only
// what came after it.
func TestRecoveryAfterIdle(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	overloadFor(f, l)
	require.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9)
	f.now.Add(int64(20 * DefaultInterval))
	assert.Zero(t, f.interval(l, 10*target, 640), "one interval over after the quiet one is a burst")
	assert.InDelta(t, 1.0, l.Share(), 0)
}

// Concurrent requests at an interval's end: one of them samples, the
// others go on.
func TestOneSamplePerInterval(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	for range 5 {
		f.latency.Store(int64(10 * target))
		f.now.Add(int64(DefaultInterval))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				<-start
				for range 100 {
					l.Shed(context.Background())
				}
			})
		}
		close(start)
		wg.Wait()
	}
	assert.Equal(t, int64(5), f.samples.Load())
	assert.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9)
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	assert.Panics(t, func() { New(Config{}) })
	l := New(Config{Target: target, MinAdmit: 2})
	assert.InDelta(t, DefaultMinAdmit, l.cfg.MinAdmit, 0)
	assert.Equal(t, DefaultInterval, l.cfg.Interval)
	assert.False(t, l.Shed(context.Background()), "a new Limiter admits")
}

func TestQuantile(t *testing.T) {
	t.Parallel()
	buckets := []float64{0, 0.001, 0.002, 0.004, math.Inf(1)}
	prev := []uint64{5, 5, 5, 5}
	// 90 latencies under 1 ms and 10 between 2 and 4 ms since prev: the
	// 90th percentile is in the first bucket.
	assert.Equal(t, time.Millisecond, quantile([]uint64{95, 5, 5, 5}, prev, buckets, 90))
	assert.Equal(t, time.Millisecond, quantile([]uint64{95, 5, 15, 5}, prev, buckets, 100))
	assert.Equal(t, 4*time.Millisecond, quantile([]uint64{94, 5, 15, 5}, prev, buckets, 99))
	// In the last, unbounded bucket: its lower bound.
	assert.Equal(t, 4*time.Millisecond, quantile([]uint64{5, 5, 5, 105}, prev, buckets, 100))
}

// The runtime's histogram is there and read as a delta: a fresh sampler
// has a baseline, and what it reports is a latency, not a total.
func TestSchedSampler(t *testing.T) {
	t.Parallel()
	s := newSchedSampler()
	require.NotEmpty(t, s.prev, "the runtime has %s", schedLatencies)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {})
	}
	wg.Wait()
	assert.GreaterOrEqual(t, s.p90(), time.Duration(0))
	assert.Less(t, s.p90(), time.Minute)
}

// BenchmarkShed is the cost a request pays to be admitted by a calm
// Limiter on the runtime's clock and sampler.
func BenchmarkShed(b *testing.B) {
	l := New(Config{Target: time.Hour})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if l.Shed(context.Background()) {
				b.Fatal("a calm Limiter shed")
			}
		}
	})
}

// TestSchedSamplerNeedsLoad: an interval in which few goroutines were
// scheduled says nothing (0, never overloaded), however long they waited;
// one with many gives their 90th percentile.
func TestSchedSamplerNeedsLoad(t *testing.T) {
	pingPong := func(n int) {
		ping, pong := make(chan struct{}), make(chan struct{})
		go func() {
			for range ping {
				pong <- struct{}{}
			}
			close(pong)
		}()
		for range n {
			ping <- struct{}{}
			<-pong
		}
		close(ping)
		<-pong
	}
	s := newSchedSampler()
	s.p90()
	pingPong(10)
	assert.Equal(t, time.Duration(0), s.p90(), "a few wake-ups are no load")
	pingPong(10 * minScheduled)
	assert.Positive(t, s.p90(), "many are")
}

// Retry-After is how long the queue takes to drain, the mean wait, in
// whole seconds from 1 to MaxRetryAfter, and the data says the same wait
// as the header.
func TestRetryAfterIsTheDrainTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		wait time.Duration
		want int64
	}{
		{0, 1},
		{40 * time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + time.Millisecond, 2},
		{2 * time.Second, 2},
		{time.Minute, MaxRetryAfter},
	} {
		assert.Equal(t, tc.want, retrySeconds(tc.wait), "wait %v", tc.wait)
		var d struct {
			RetryAfter int64 `json:"retryAfterSeconds"`
		}
		require.NoError(t, json.Unmarshal([]byte(RetryData(int(tc.want))), &d))
		assert.Equal(t, tc.want, d.RetryAfter)
	}
}

// spread moves the clock through one interval in SamplesPerInterval
// steps, with a request at each of the first n (the first of each step
// measured), and returns how many of them the Limiter shed.
func (f *fake) spread(l *Limiter, n int) int {
	return f.spreadEach(l, n, 1)
}

// spreadEach is spread with each of the first n steps making per
// requests.
func (f *fake) spreadEach(l *Limiter, n, per int) int {
	step := DefaultInterval / SamplesPerInterval
	shed := 0
	for i := range SamplesPerInterval {
		f.now.Add(int64(step))
		for range per {
			if i < n && l.Shed(context.Background()) {
				shed++
			}
		}
	}
	return shed
}

// With MinQueued or more queueing delays measured in an interval, their
// 90th percentile is its delay, whatever the scheduling latency.
func TestQueuedDelaysAreTheSignal(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	f.queued.Store(int64(10 * target))
	for range Window + 1 {
		f.spread(l, SamplesPerInterval)
	}
	assert.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9, "requests queue, the scheduler is calm")
	assert.Equal(t, int64((Window+1)*SamplesPerInterval), f.measured.Load(), "one request measured per step")
	assert.Equal(t, int64(Window+1), f.samples.Load(), "the scheduler read every interval all the same")

	f.queued.Store(int64(target / 2))
	f.latency.Store(int64(10 * target))
	for range Window + int(2/Gain) {
		f.spread(l, SamplesPerInterval)
	}
	assert.InDelta(t, 1.0, l.Share(), 0, "requests do not queue, whatever the scheduler's latency")
}

// An interval with fewer than MinQueued queueing delays (a transport
// that cannot see them, or few requests) takes the scheduling latency.
func TestFewQueuedDelaysFallBack(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	f.queued.Store(int64(10 * target))
	for range Window + 1 {
		f.spread(l, MinQueued-1)
	}
	assert.InDelta(t, 1.0, l.Share(), 0, "too few delays: the calm scheduler decides")
	f.latency.Store(int64(10 * target))
	for range Window + 1 {
		f.spread(l, MinQueued-1)
	}
	assert.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9, "the saturated scheduler decides")
}

// idleAndBusy starts f's CPU clock and returns the CPU time of an
// interval just under MinBusy of the processors, and of one just over.
func (f *fake) idleAndBusy() (idle, busy time.Duration) {
	f.cpu.Store(0)
	procs := float64(runtime.GOMAXPROCS(0))
	return time.Duration(0.9 * MinBusy * procs * float64(DefaultInterval)), time.Duration(1.1 * MinBusy * procs * float64(DefaultInterval))
}

// A process that used less than MinBusy of its processors in an interval
// is not what keeps its requests waiting: it sheds nothing, however long
// they wait.
func TestIdleProcessShedsNothing(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	f.queued.Store(int64(10 * target))
	idle, busy := f.idleAndBusy()
	for range Window + 1 {
		f.cpu.Add(int64(idle))
		f.spread(l, SamplesPerInterval)
	}
	assert.InDelta(t, 1.0, l.Share(), 0, "under MinBusy: calm")
	for range Window + 1 {
		f.cpu.Add(int64(busy))
		f.spread(l, SamplesPerInterval)
	}
	assert.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9, "over MinBusy: overloaded")
}

// A process that was not busy in the last interval measures no queueing
// delay in this one (each is a system call, for a decision that calm
// makes anyway), and measures again once an interval was busy.
func TestCalmProcessMeasuresNoQueue(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	f.queued.Store(int64(10 * target))
	idle, busy := f.idleAndBusy()
	f.cpu.Add(int64(idle))
	f.spread(l, SamplesPerInterval) // the first interval: measured, found calm
	measured := f.measured.Load()
	require.Positive(t, measured)
	for range 3 {
		f.cpu.Add(int64(idle))
		f.spread(l, SamplesPerInterval)
	}
	assert.Equal(t, measured, f.measured.Load(), "calm: no request measured")
	f.cpu.Add(int64(busy))
	f.spread(l, SamplesPerInterval) // busy, by the CPU it used: found at its end
	f.cpu.Add(int64(busy))
	f.spread(l, SamplesPerInterval)
	assert.Greater(t, f.measured.Load(), measured, "busy again: measured again")
}

// take returns the 90th percentile of what was added since the last take
// and how many, at most what delays holds.
func TestDelaysTake(t *testing.T) {
	t.Parallel()
	var q delays
	p90, mean, n := q.take()
	assert.Zero(t, n)
	assert.Zero(t, p90)
	assert.Zero(t, mean)
	for i := 10; i >= 1; i-- {
		q.add(time.Duration(i) * time.Millisecond)
	}
	p90, mean, n = q.take()
	assert.Equal(t, 10, n)
	assert.Equal(t, 9*time.Millisecond, p90, "the 9th of 10")
	assert.Equal(t, 5500*time.Microsecond, mean)
	_, _, n = q.take()
	assert.Zero(t, n, "taken")
	for range 3 * len(q.d) {
		q.add(time.Millisecond)
	}
	_, _, n = q.take()
	assert.Equal(t, len(q.d), n, "no more than it holds")
}

// Fewer than MinWaiting requests waiting, by Little's law (the requests
// asked about per second times the delay), are a handful of clients,
// however long each waits: nothing is shed. As many more requests
// waiting as the same delay takes are shed.
func TestFewWaitingShedNothing(t *testing.T) {
	t.Parallel()
	f, l := newFakeWaiting(t, DefaultMinWaiting)
	f.queued.Store(int64(10 * target)) // 50 ms
	// 320 requests a second wait 16 on average.
	for range Window + 1 {
		f.spread(l, SamplesPerInterval)
	}
	assert.InDelta(t, 1.0, l.Share(), 0, "16 waiting: calm")
	// 3,200 requests a second, a fifth of them 50 ms and the rest 1 ms:
	// the 90th percentile is 50 ms, but they wait 35 on average.
	f.skewed.Store(true)
	for range Window + 1 {
		f.spreadEach(l, SamplesPerInterval, 10)
	}
	assert.InDelta(t, 1.0, l.Share(), 0, "35 waiting: calm, however long the 90th percentile")
	f.skewed.Store(false)
	// 3,200 requests a second wait 160: fewer than DefaultMinWaiting.
	for range Window + 1 {
		f.spreadEach(l, SamplesPerInterval, 10)
	}
	assert.InDelta(t, 1.0, l.Share(), 0, "160 waiting: calm")
	// 6,400 requests a second wait 320.
	for range Window + 1 {
		f.spreadEach(l, SamplesPerInterval, 20)
	}
	assert.Less(t, l.Share(), 1.0, "320 waiting: overloaded")
}

// Shedding starts with over MinWaiting requests waiting and goes on down
// to a quarter of it, since the clients it sends away are what brings the
// number waiting down: 160 waiting do not start it, but keep it going; 32
// end it at once, since every refusal then sends a client away for
// seconds from a queue that is already gone.
func TestShedsOnDownToAQuarterOfMinWaiting(t *testing.T) {
	t.Parallel()
	f, l := newFakeWaiting(t, DefaultMinWaiting)
	f.queued.Store(int64(10 * target))
	for range Window + 1 {
		f.spreadEach(l, SamplesPerInterval, 10) // 160 waiting
	}
	require.InDelta(t, 1.0, l.Share(), 0, "160 waiting: calm")
	for range Window + 1 {
		f.spreadEach(l, SamplesPerInterval, 20) // 320 waiting
	}
	require.Less(t, l.Share(), 1.0, "320 waiting: shedding")
	shedding := l.Share()
	for range Window + 1 {
		f.spreadEach(l, SamplesPerInterval, 10) // 160 waiting
	}
	assert.LessOrEqual(t, l.Share(), shedding, "160 waiting while shedding: still over the target, goes on")
	f.spreadEach(l, SamplesPerInterval, 2) // 32 waiting
	assert.InDelta(t, 1.0, l.Share(), 0, "32 waiting: the queue is gone, shedding stops at once")
}

// Shedding never leaves the CPUs idle: intervals in which the process
// used less than FullBusy of the most it used lately (averaged over the
// last Window intervals: the clients sent away stay away, and the CPUs
// have nothing to do) are calm, however long the requests left wait, and
// the share falls back; once the CPUs are as busy as they get again,
// shedding resumes. A lower peak (a neighbor took processors) becomes the
// measure within seconds.
func TestSheddingNeverIdlesTheCPUs(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	f.queued.Store(int64(10 * target))
	f.cpu.Store(0)
	procs := float64(runtime.GOMAXPROCS(0))
	at := func(share float64) {
		f.cpu.Add(int64(share * procs * float64(DefaultInterval)))
		f.spread(l, SamplesPerInterval)
	}
	for range Window + 1 {
		at(1)
	}
	require.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9, "the CPUs busy, requests waiting: overloaded")
	at(0.5)
	assert.Less(t, l.Share(), 1.0, "one interval's dip is no idle CPU")
	at(0.5)
	at(0.5)
	assert.InDelta(t, 1.0, l.Share(), 0, "half the CPUs idle: shedding stops, whatever the wait")
	for range Window + 1 {
		at(1)
	}
	assert.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9, "busy again: shedding resumes")
	// Half the processors from now on: calm at first, then the new peak.
	calm := 0
	for range 100 {
		at(0.5)
		if l.Share() == 1 {
			calm++
		}
	}
	assert.Positive(t, calm)
	assert.Less(t, calm, 20, "the peak decays within two seconds")
	assert.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9, "half the CPUs, all of them busy: overloaded")
}

// spreadCallers is spread with request i of the interval's
// SamplesPerInterval from callers[i%len(callers)].
func (f *fake) spreadCallers(l *Limiter, callers []string) {
	step := DefaultInterval / SamplesPerInterval
	for i := range SamplesPerInterval {
		f.now.Add(int64(step))
		l.ShedCaller(context.Background(), callers[i%len(callers)])
	}
}

// refusedOf counts how many of n requests of caller l refuses now.
func refusedOf(l *Limiter, n int, caller string) int {
	refused := 0
	for range n {
		if l.ShedCaller(context.Background(), caller) > 0 {
			refused++
		}
	}
	return refused
}

// While shedding, a caller that sends under half the mean share of the
// requests is never refused, and the others are refused in proportion to
// their share, so that the share refused over all the requests is still
// the Limiter's: one heavy caller cannot have a light one's requests
// refused, and callers alike are refused alike.
func TestHeaviestCallerFirst(t *testing.T) {
	t.Parallel()
	overloaded := func(callers ...string) *Limiter {
		f, l := newFake(t)
		f.queued.Store(int64(10 * target))
		for range Window + 1 {
			f.spreadCallers(l, callers)
		}
		require.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9)
		return l
	}
	maxShed := 6400 * (1 - DefaultMinAdmit)

	// Nine requests in ten from one caller: of 32 noted, 29 and 3; the
	// mean share (29² + 3²)/32², 0.83; the heavy caller refused with
	// probability 0.1 × (29/32)/0.83.
	l := overloaded("heavy", "heavy", "heavy", "heavy", "light", "heavy", "heavy", "heavy", "heavy", "heavy")
	assert.Zero(t, refusedOf(l, 6400, "light"), "the light caller")
	assert.Zero(t, refusedOf(l, 6400, "new"), "a caller not noted")
	heavy := refusedOf(l, 6400, "heavy")
	assert.InDelta(t, maxShed*29*32/(29*29+3*3), float64(heavy), 100, "the heavy caller bears the whole share")
	assert.InDelta(t, maxShed, float64(refusedOf(l, 6400, "")), 100, "a request whose caller is unknown: uniformly")

	// Two callers alike, then a hundred: refused alike, the Limiter's share.
	l = overloaded("a", "b")
	assert.InDelta(t, maxShed, float64(refusedOf(l, 6400, "a")), 100)
	assert.InDelta(t, maxShed, float64(refusedOf(l, 6400, "b")), 100)
	many := make([]string, 100)
	for i := range many {
		many[i] = strconv.Itoa(i)
	}
	l = overloaded(many...)
	assert.InDelta(t, maxShed, float64(refusedOf(l, 6400, "7")), 100, "a caller noted once")
	assert.InDelta(t, maxShed, float64(refusedOf(l, 6400, "new")), 100, "a caller not noted counts as noted once")

	// Too few callers known (a transport that cannot tell): uniformly.
	l = overloaded("heavy", "", "", "", "")
	assert.InDelta(t, maxShed, float64(refusedOf(l, 6400, "light")), 100)
}

// A process whose Ps were withheld since New (a follower of the load ran
// it on one while quiet) sheds nothing, however long its requests wait:
// it gets its Ps back within the follower's interval. Not parallel: it
// sets GOMAXPROCS.
func TestWithheldProcsShedNothing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	f, l := newFake(t)
	runtime.GOMAXPROCS(1)
	for range 3 * Window {
		assert.Zero(t, f.interval(l, 10*target, 1000), "one P of two: nothing shed")
	}
	runtime.GOMAXPROCS(2)
	overloadFor(f, l)
	assert.Positive(t, shedOf(l, 1000), "its Ps back, the same delay sheds")
}

// A process on fewer Ps than it was given gets them back from the
// Limiter at the first interval that keeps the Ps it has busy (a burst),
// not at a quiet one. Not parallel: it sets GOMAXPROCS.
func TestWithheldProcsGivenBackByABurst(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	f, l := newFake(t)
	f.cpu.Store(0)
	runtime.GOMAXPROCS(1)
	for range 3 {
		f.cpu.Add(int64(DefaultInterval / 10))
		assert.Zero(t, f.interval(l, 10*target, 1000), "one P of two: nothing shed")
		require.Equal(t, 1, runtime.GOMAXPROCS(0), "a tenth of a P used: rest, the P withheld")
	}
	f.cpu.Add(int64(float64(DefaultInterval) * WithheldBusy))
	assert.Zero(t, f.interval(l, 10*target, 1000), "the burst's interval is the missing Ps': nothing shed")
	assert.Equal(t, 2, runtime.GOMAXPROCS(0), "half the P used: its Ps back at once")
}
