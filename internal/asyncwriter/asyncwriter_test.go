package asyncwriter_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/asyncwriter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sink is a destination that records each write, and blocks while gate
// is not nil and not closed.
type sink struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	gate   chan struct{}
}

func (s *sink) Write(p []byte) (int, error) {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.buf.Write(p)
}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func (s *sink) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

func TestFlushesWithinTheInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{}
		w := asyncwriter.New(out, asyncwriter.WithFlushInterval(100*time.Millisecond))
		defer func() { require.NoError(t, w.Close()) }()
		for i := range 3 {
			_, err := fmt.Fprintf(w, "line %d\n", i)
			require.NoError(t, err)
		}
		synctest.Wait()
		assert.Empty(t, out.String(), "written before the interval")
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, "line 0\nline 1\nline 2\n", out.String())
		assert.Equal(t, 1, out.Writes(), "one write for the buffered lines")
	})
}

func TestCloseWritesEverythingAndThenWritesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{}
		w := asyncwriter.New(out)
		_, _ = w.Write([]byte("before\n"))
		require.NoError(t, w.Close())
		assert.Equal(t, "before\n", out.String(), "Close writes the buffer before it returns")
		n, err := w.Write([]byte("after\n"))
		require.NoError(t, err)
		assert.Equal(t, 6, n)
		assert.Equal(t, "before\nafter\n", out.String(), "a write after Close reaches the destination at once")
		require.NoError(t, w.Close(), "Close twice")
		assert.Zero(t, w.Dropped())
	})
}

func TestFullBufferDropsAndCountsWithoutBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{gate: make(chan struct{})}
		w := asyncwriter.New(out, asyncwriter.WithBufferSize(64), asyncwriter.WithFlushInterval(time.Hour))
		line := []byte(strings.Repeat("x", 15) + "\n") // 16 bytes
		for range 2 {
			_, _ = w.Write(line)
		}
		synctest.Wait() // half full: the goroutine flushes, and blocks in the destination
		require.Zero(t, out.Writes())
		for range 4 { // fills the emptied buffer
			_, _ = w.Write(line)
		}
		assert.Zero(t, w.Dropped())
		n, err := w.Write(line) // no room: dropped, without waiting
		require.NoError(t, err)
		assert.Equal(t, len(line), n)
		_, _ = w.Write([]byte("two\nlines\n"))
		_, _ = w.Write([]byte("no newline"))
		assert.Equal(t, uint64(4), w.Dropped(), "lines dropped")
		close(out.gate)
		require.NoError(t, w.Close())
		assert.Equal(t, strings.Repeat(string(line), 6), out.String(), "every line not dropped, whole and in order")
	})
}

func TestHalfFullFlushesBeforeTheInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{}
		w := asyncwriter.New(out, asyncwriter.WithBufferSize(32), asyncwriter.WithFlushInterval(time.Hour))
		defer func() { require.NoError(t, w.Close()) }()
		_, _ = w.Write([]byte("0123456789\n"))
		synctest.Wait()
		assert.Empty(t, out.String())
		_, _ = w.Write([]byte("0123456789\n"))
		synctest.Wait()
		assert.Equal(t, "0123456789\n0123456789\n", out.String())
	})
}

func TestFlush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{}
		w := asyncwriter.New(out, asyncwriter.WithFlushInterval(time.Hour))
		defer func() { require.NoError(t, w.Close()) }()
		_, _ = w.Write([]byte("now\n"))
		require.NoError(t, w.Flush())
		assert.Equal(t, "now\n", out.String())
	})
}

// TestConcurrentWritesStayWhole writes from many goroutines, with flushes
// in between, and checks that every line arrives once and whole.
func TestConcurrentWritesStayWhole(t *testing.T) {
	t.Parallel()
	watchdog := time.AfterFunc(30*time.Second, func() { panic("TestConcurrentWritesStayWhole hung") })
	defer watchdog.Stop()
	out := &sink{}
	w := asyncwriter.New(out, asyncwriter.WithBufferSize(4096), asyncwriter.WithFlushInterval(time.Millisecond))
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				_, _ = fmt.Fprintf(w, "writer %d line %d\n", g, i)
			}
		})
	}
	wg.Wait()
	require.NoError(t, w.Close())
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Equal(t, writers*each, len(got)+int(w.Dropped()), "every line written or counted as dropped")
	seen := map[string]bool{}
	last := make([]int, writers)
	for g := range last {
		last[g] = -1
	}
	for _, l := range got {
		var g, i int
		_, err := fmt.Sscanf(l, "writer %d line %d", &g, &i)
		require.NoError(t, err, "line %q", l)
		assert.False(t, seen[l], "line %q twice", l)
		seen[l] = true
		assert.Greater(t, i, last[g], "writer %d's lines out of order", g)
		last[g] = i
	}
}

// TestWritesRacingCloseAreKeptInOrder closes the writer while goroutines
// write: each goroutine's lines all arrive, in the order written, whether
// they were buffered before Close took the buffer or written through
// after it.
func TestWritesRacingCloseAreKeptInOrder(t *testing.T) {
	t.Parallel()
	watchdog := time.AfterFunc(30*time.Second, func() { panic("TestWritesRacingCloseAreKeptInOrder hung") })
	defer watchdog.Stop()
	out := &sink{}
	w := asyncwriter.New(out, asyncwriter.WithFlushInterval(time.Hour))
	const writers, each = 4, 400
	started := make(chan struct{}, writers)
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				if i == each/4 {
					started <- struct{}{}
				}
				_, _ = fmt.Fprintf(w, "writer %d line %d\n", g, i)
			}
		})
	}
	for range writers {
		<-started // every writer is a quarter through
	}
	require.NoError(t, w.Close())
	wg.Wait()
	require.Zero(t, w.Dropped())
	next := make([]int, writers)
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var g, i int
		_, err := fmt.Sscanf(l, "writer %d line %d", &g, &i)
		require.NoError(t, err, "line %q", l)
		require.Equal(t, next[g], i, "writer %d: a line lost or out of order", g)
		next[g]++
	}
	for g := range writers {
		assert.Equal(t, each, next[g], "writer %d's lines", g)
	}
}

// With WithBlock, a Write that finds the buffer full while the destination
// is stalled waits exactly the block time, then drops its line and counts
// it: every line is either written or counted.
func TestBlockWaitsThenDropsAndCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{gate: make(chan struct{})}
		w := asyncwriter.New(out, asyncwriter.WithBufferSize(64), asyncwriter.WithFlushInterval(time.Hour),
			asyncwriter.WithBlock(100*time.Millisecond))
		line := []byte(strings.Repeat("x", 15) + "\n") // 16 bytes
		for range 2 {
			_, _ = w.Write(line)
		}
		synctest.Wait() // half full: the goroutine flushes, and blocks in the destination
		for range 4 {   // fills the emptied buffer
			_, _ = w.Write(line)
		}
		start := time.Now()
		n, err := w.Write(line) // no room, and none comes: waits, then drops
		require.NoError(t, err)
		assert.Equal(t, len(line), n)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "waited the block time")
		assert.Equal(t, uint64(1), w.Dropped())
		start = time.Now()
		_, _ = w.Write(make([]byte, 65)) // larger than the buffer: dropped at once
		assert.Zero(t, time.Since(start))
		assert.Equal(t, uint64(2), w.Dropped())
		close(out.gate)
		require.NoError(t, w.Close())
		assert.Equal(t, strings.Repeat(string(line), 6), out.String(), "every line not dropped, whole and in order")
	})
}

// With WithBlock, a stall of the destination shorter than the block time
// loses nothing: the Write waits until the buffer is taken.
func TestBlockWaitsOutAShortStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{gate: make(chan struct{})}
		w := asyncwriter.New(out, asyncwriter.WithBufferSize(64), asyncwriter.WithFlushInterval(time.Hour),
			asyncwriter.WithBlock(100*time.Millisecond))
		var want strings.Builder
		for i := range 6 {
			line := fmt.Sprintf("line %010d\n", i) // 16 bytes
			_, _ = w.Write([]byte(line))
			want.WriteString(line)
			if i == 1 {
				synctest.Wait() // the goroutine flushes, and blocks in the destination
			}
		}
		stall := time.AfterFunc(40*time.Millisecond, func() { close(out.gate) })
		defer stall.Stop()
		start := time.Now()
		_, _ = w.Write([]byte("line 0000000006\n"))
		want.WriteString("line 0000000006\n")
		assert.Equal(t, 40*time.Millisecond, time.Since(start), "waited for the destination")
		assert.Zero(t, w.Dropped())
		require.NoError(t, w.Close())
		assert.Equal(t, want.String(), out.String())
	})
}

// A Write waiting for room when Close is called is written through, after
// what was buffered.
func TestBlockedWriteRacingClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{gate: make(chan struct{})}
		w := asyncwriter.New(out, asyncwriter.WithBufferSize(32), asyncwriter.WithFlushInterval(time.Hour),
			asyncwriter.WithBlock(time.Hour))
		_, _ = w.Write([]byte("first line ....\n")) // half full: flushed, blocks in the destination
		synctest.Wait()
		_, _ = w.Write([]byte("second line ...\n"))
		_, _ = w.Write([]byte("third line ....\n")) // fills the emptied buffer
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = w.Write([]byte("fourth line ...\n")) // waits for room
		}()
		synctest.Wait()
		closed := make(chan error)
		go func() { closed <- w.Close() }()
		close(out.gate)
		require.NoError(t, <-closed)
		<-done
		assert.Zero(t, w.Dropped())
		assert.Equal(t, "first line ....\nsecond line ...\nthird line ....\nfourth line ...\n", out.String())
	})
}

// TestIdleWriterRunsNoTimer checks that a Writer with nothing buffered has
// no timer running (an idle process is not woken every interval), and that
// a line written after a long quiet spell still leaves within one interval.
func TestIdleWriterRunsNoTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &sink{}
		w := asyncwriter.New(out, asyncwriter.WithFlushInterval(100*time.Millisecond))
		defer func() { require.NoError(t, w.Close()) }()
		_, err := fmt.Fprintln(w, "one")
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		require.Equal(t, "one\n", out.String())

		// Idle for an hour: the writer's goroutine does not wake once.
		wakes := asyncwriter.Wakes(w)
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, wakes, asyncwriter.Wakes(w), "an idle writer sleeps")
		assert.Equal(t, 1, out.Writes())

		_, err = fmt.Fprintln(w, "two")
		require.NoError(t, err)
		time.Sleep(99 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, "one\n", out.String(), "not before the interval")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, "one\ntwo\n", out.String())
	})
}
