package quota

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AcquireN counts units by size: a key is refused what would take it over
// its limit, but a key that holds nothing gets any size; Force counts
// whatever the limit, and makes the next AcquireN fail; Shrink gives back
// what a reservation held beyond its size; Add grows a hold, or takes
// anew for a hold released.
func TestCounterAcquireN(t *testing.T) {
	c := New(10)
	a, ok := c.AcquireN("a", 6)
	require.True(t, ok)
	_, ok = c.AcquireN("a", 5)
	assert.False(t, ok, "6 + 5 is over 10")
	a4, ok := c.AcquireN("a", 4)
	require.True(t, ok, "6 + 4 is the limit")
	assert.Equal(t, 10, c.Held("a"))

	big, ok := c.AcquireN("b", 50)
	assert.True(t, ok, "a key that holds nothing gets any size")
	_, ok = c.AcquireN("b", 1)
	assert.False(t, ok)
	big.Release()

	f := c.Force("a", 3)
	assert.Equal(t, 13, c.Held("a"), "forced past the limit")
	a4.Release()
	_, ok = c.AcquireN("a", 2)
	assert.False(t, ok, "the forced units count: 6 + 3 + 2 is over 10")
	f.Release()

	a.Shrink(2)
	assert.Equal(t, 2, c.Held("a"), "shrunk to 2")
	a.Shrink(5)
	assert.Equal(t, 2, c.Held("a"), "a shrink never grows")
	c.Add(&a, "a", 20)
	assert.Equal(t, 22, c.Held("a"), "grown past the limit")
	a.Release()
	assert.Zero(t, c.Held("a"), "released what was left after the shrink and the growth")
	c.Add(&a, "a", 1)
	assert.Equal(t, 1, c.Held("a"), "a released hold takes anew")
	a.Release()

	var none *Counter
	h, ok := none.AcquireN("x", 1<<40)
	assert.True(t, ok, "nil: no limit")
	h.Shrink(1)
	none.Add(&h, "x", 1)
	h.Release()
	f = none.Force("x", 1)
	f.Release()
}

// Under concurrency a key's sizes never add up past its limit while only
// AcquireN takes them (but for the first, which may be larger), every
// hold's release and shrink balance, and the key holds nothing at the end.
func TestCounterAcquireNConcurrent(t *testing.T) {
	const limit, workers = 100, 16
	c := New(limit)
	var held atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			<-start
			for i := range 300 {
				n := int64(1 + (w*7+i)%40)
				h, ok := c.AcquireN("k", n)
				if !ok {
					continue
				}
				if got := held.Add(n); got > limit {
					t.Errorf("holds %d > %d", got, limit)
				}
				keep := n / 2
				held.Add(keep - n)
				h.Shrink(keep)
				held.Add(-keep)
				h.Release()
			}
		})
	}
	close(start)
	wg.Wait()
	assert.Zero(t, c.Held("k"))
	_, ok := c.AcquireN("k", limit)
	assert.True(t, ok, "the whole limit is free again")
}
