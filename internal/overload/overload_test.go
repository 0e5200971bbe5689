package overload

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const target = 5 * time.Millisecond

// fake is a Limiter's world: a clock moved by hand, the latency its next
// sample reports, and a random source that sweeps [0, 2^32) evenly.
type fake struct {
	now     atomic.Int64
	latency atomic.Int64
	samples atomic.Int64
	next    atomic.Uint32
}

func newFake(t *testing.T) (*fake, *Limiter) {
	t.Helper()
	f := &fake{}
	l := New(Config{
		Target: target,
		Now:    func() time.Duration { return time.Duration(f.now.Load()) },
		Sample: func() time.Duration { f.samples.Add(1); return time.Duration(f.latency.Load()) },
		Rand:   func() uint32 { return f.next.Add(1<<32/64+1) - 1 }, // 64 evenly spread values per lap
	})
	return f, l
}

// interval moves the clock one interval on, has the latency be latency,
// and returns how many of n requests the Limiter then sheds.
func (f *fake) interval(l *Limiter, latency time.Duration, n int) int {
	f.latency.Store(int64(latency))
	f.now.Add(int64(DefaultInterval))
	shed := 0
	for range n {
		if l.Shed() {
			shed++
		}
	}
	return shed
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

func TestOverloadShedsItsShareDownToTheFloor(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	// The first intervals over the target may be a burst: nothing shed.
	for i := range Sustain - 1 {
		assert.Zero(t, f.interval(l, 10*target, 640), "interval %d: a burst so far", i)
	}
	// Then, however far over the target, the share shrinks by a tenth
	// per interval, never below the floor.
	want := 1.0
	for i := range 6 {
		f.interval(l, target+time.Duration(i+1)*target, 1)
		want *= Backoff
		assert.InDelta(t, want, l.Share(), 1e-9, "interval %d", i)
	}
	require.Greater(t, l.Share(), DefaultMinAdmit)
	f.interval(l, 10*target, 1)
	assert.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9, "0.9^7 < 0.5: at the floor")
	for range 10 {
		f.interval(l, 10*target, 1)
	}
	assert.InDelta(t, DefaultMinAdmit, l.Share(), 1e-9, "the floor holds however long the overload lasts")
	// The share refused is the share shed: 64 random values spread evenly.
	shed := 0
	for range 6400 {
		if l.Shed() {
			shed++
		}
	}
	assert.InDelta(t, 3200, shed, 100)
}

// overloadFor drives l to its floor with intervals far over the target.
func overloadFor(f *fake, l *Limiter) {
	for range Sustain - 1 + 7 {
		f.interval(l, 10*target, 1)
	}
}

// Bursts over the target shorter than Sustain intervals, however often
// and however far over, shed nothing.
func TestBurstsShedNothing(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	for range 20 {
		for range Sustain - 1 {
			assert.Zero(t, f.interval(l, 100*target, 640))
		}
		assert.Zero(t, f.interval(l, target/2, 640))
	}
	assert.InDelta(t, 1.0, l.Share(), 0)
}

func TestRecoveryIsAdditive(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	overloadFor(f, l)
	require.InDelta(t, 0.5, l.Share(), 1e-9)
	for i := 1; i <= 9; i++ {
		assert.Positive(t, f.interval(l, target/2, 640), "interval %d: still shedding", i)
		assert.InDelta(t, 0.5+Step*float64(i), l.Share(), 1e-9)
	}
	assert.Zero(t, f.interval(l, target/2, 640), "back to admitting all")
	assert.InDelta(t, 1.0, l.Share(), 0)
}

// After a quiet spell with no request to sample, the first sample counts
// every interval that passed.
func TestRecoveryAfterIdle(t *testing.T) {
	t.Parallel()
	f, l := newFake(t)
	overloadFor(f, l)
	require.InDelta(t, 0.5, l.Share(), 1e-9)
	f.now.Add(int64(20 * DefaultInterval))
	assert.Zero(t, f.interval(l, 0, 640))
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
					l.Shed()
				}
			})
		}
		close(start)
		wg.Wait()
	}
	assert.Equal(t, int64(5), f.samples.Load())
	assert.InDelta(t, math.Pow(Backoff, 5-(Sustain-1)), l.Share(), 1e-9, "one decrease per interval")
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	assert.Panics(t, func() { New(Config{}) })
	l := New(Config{Target: target, MinAdmit: 2})
	assert.InDelta(t, DefaultMinAdmit, l.cfg.MinAdmit, 0)
	assert.Equal(t, DefaultInterval, l.cfg.Interval)
	assert.False(t, l.Shed(), "a new Limiter admits")
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
			if l.Shed() {
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
