package quota

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A key holds at most the limit; another key is not affected; a released
// unit is free again.
func TestCounter(t *testing.T) {
	c := New(2)
	a1, ok := c.Acquire("a")
	require.True(t, ok)
	a2, ok := c.Acquire("a")
	require.True(t, ok)
	_, ok = c.Acquire("a")
	assert.False(t, ok, "over the limit")
	b, ok := c.Acquire("b")
	assert.True(t, ok, "another key")
	assert.Equal(t, 2, c.Held("a"))
	assert.Equal(t, 2, c.Keys())
	a1.Release()
	a3, ok := c.Acquire("a")
	assert.True(t, ok, "a released unit is free")
	a2.Release()
	a3.Release()
	b.Release()
	assert.Zero(t, c.Held("a"))
	assert.Zero(t, c.Held("b"))

	var none *Counter
	h, ok := none.Acquire("x")
	assert.True(t, ok, "nil: no limit")
	h.Release()
	assert.Nil(t, New(0))
	assert.Zero(t, none.Limit())
}

// Under concurrency no key ever holds more than the limit, every Acquire
// below it succeeds, and the map is empty once all is released.
func TestCounterConcurrent(t *testing.T) {
	const limit, workers, keys = 3, 24, 4
	c := New(limit)
	var held [keys]atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			<-start
			k := w % keys
			for range 200 {
				h, ok := c.Acquire("k" + strconv.Itoa(k))
				if !ok {
					continue
				}
				if n := held[k].Add(1); n > limit {
					t.Errorf("key %d holds %d > %d", k, n, limit)
				}
				held[k].Add(-1)
				h.Release()
			}
		})
	}
	close(start)
	wg.Wait()
	for k := range keys {
		assert.Zero(t, c.Held("k"+strconv.Itoa(k)))
	}
}

// Keys a client makes up go: however many come and go, the map keeps a
// bounded number (twice sweepMin, and the keys held), and a key
// that holds something is never swept out, even when new keys race it.
func TestCounterSweepsIdleKeys(t *testing.T) {
	c := New(1)
	kept, ok := c.Acquire("kept")
	require.True(t, ok)
	var wg sync.WaitGroup
	var maxKeys atomic.Int64
	start := make(chan struct{})
	for w := range 4 {
		wg.Go(func() {
			<-start
			for i := range 5000 {
				h, ok := c.Acquire("w" + strconv.Itoa(w) + "-" + strconv.Itoa(i))
				if !ok {
					t.Errorf("a fresh key refused")
					return
				}
				h.Release()
				if n := int64(c.Keys()); n > maxKeys.Load() {
					maxKeys.Store(n)
				}
				if n := c.Keys(); n > 2*sweepMin+8 {
					t.Errorf("%d keys kept", n)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	t.Logf("at most %d keys", maxKeys.Load())
	assert.Equal(t, 1, c.Held("kept"))
	_, ok = c.Acquire("kept")
	assert.False(t, ok, "the held key kept its count through the sweeps")
	kept.Release()
	_, ok = c.Acquire("kept")
	assert.True(t, ok)
}

func BenchmarkCounterAcquireRelease(b *testing.B) {
	c := New(1 << 20)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h, _ := c.Acquire("127.0.0.1")
			h.Release()
		}
	})
}
