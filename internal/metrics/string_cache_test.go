package metrics

import (
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStringCache checks that a stored value is loaded back, that the
// first store of a key wins, including among writers racing for it, and
// that a store leaves the other keys as they were.
func TestStringCache(t *testing.T) {
	t.Parallel()
	var c stringCache[*int]
	_, ok := c.load("a")
	require.False(t, ok, "empty")

	const writers = 8
	vals := make([]int, writers)
	got := make([]*int, writers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			<-start
			got[i], _ = c.loadOrStore("a", &vals[i])
		})
	}
	close(start)
	wg.Wait()
	first, ok := c.load("a")
	require.True(t, ok)
	for i := range writers {
		assert.Same(t, first, got[i], "writer %d got the value stored first", i)
	}

	for i := range 10 {
		v := i
		actual, loaded := c.loadOrStore("k"+strconv.Itoa(i), &v)
		assert.False(t, loaded)
		assert.Same(t, &v, actual)
	}
	again, ok := c.load("a")
	require.True(t, ok)
	assert.Same(t, first, again, "later stores keep the earlier keys")
	for i := range 10 {
		v, ok := c.load("k" + strconv.Itoa(i))
		require.True(t, ok)
		assert.Equal(t, i, *v)
	}
}
