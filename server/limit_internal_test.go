package server

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLimiterForgetsIdleTools checks that a tool's semaphore lives only
// while calls of it hold or wait for a slot, whatever ends the wait.
func TestLimiterForgetsIdleTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &limiter{n: 1, cfg: limitConfig{wait: time.Second}, sems: make(map[string]*toolSem)}
		ctx := context.Background()
		held, err := l.acquire(ctx, "a", nil)
		require.NoError(t, err)
		assert.Len(t, l.sems, 1)

		_, err = l.acquire(ctx, "a", nil) // waits a second, then busy
		assert.Equal(t, protocol.CodeServerBusy, CodeOf(err))
		assert.Len(t, l.sems, 1, "the holder keeps it")

		cctx, cancel := context.WithCancelCause(ctx)
		errs := make(chan error)
		go func() {
			_, err := l.acquire(cctx, "a", nil)
			errs <- err
		}()
		synctest.Wait()
		assert.Equal(t, 2, l.sems["a"].refs, "the holder and the waiter")
		cause := errors.New("gone")
		cancel(cause)
		require.ErrorIs(t, <-errs, cause)

		_, err = l.acquire(ctx, "unknown-1", nil) // free: taken, never released here
		require.NoError(t, err)
		l.release("a", held)
		assert.Equal(t, []string{"unknown-1"}, keys(l.sems))
	})
}

func keys(m map[string]*toolSem) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestLimiterWaitersUnderLoad has many calls wait for few slots, of a
// pinned and of an unpinned semaphore: none may be lost (rejected after the
// long wait although slots were given back), and no more than the limit
// may hold a slot at once.
func TestLimiterWaitersUnderLoad(t *testing.T) {
	t.Parallel()
	watchdog := time.AfterFunc(60*time.Second, func() { panic("TestLimiterWaitersUnderLoad hung") })
	defer watchdog.Stop()
	for _, pinned := range []bool{false, true} {
		l := newLimiter(2, limitConfig{wait: 30 * time.Second})
		if pinned {
			l.ref("t", 2, true)
		}
		var holding, most atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for range 300 {
					s, err := l.acquire(context.Background(), "t", nil)
					if err != nil {
						t.Error(err) // not require: this is not the test's goroutine
						return
					}
					raise(&most, holding.Add(1))
					runtime.Gosched()
					holding.Add(-1)
					l.release("t", s)
				}
			})
		}
		wg.Wait()
		assert.LessOrEqual(t, most.Load(), int64(2), "pinned %v: slots held at once", pinned)
		assert.Empty(t, l.sems, "pinned %v: no unpinned semaphore left", pinned)
		assert.Equal(t, pinned, l.pinnedSem("t") != nil)
	}
}

// raise sets *v to n if n is larger.
func raise(v *atomic.Int64, n int64) {
	for m := v.Load(); n > m; m = v.Load() {
		if v.CompareAndSwap(m, n) {
			return
		}
	}
}

// TestLimiterHandsOnTheSlot checks, in fake time, that a release lets a
// waiter in at once (no lost wake-up: it does not wait out its time), and
// that a waiter that gives up leaves the queue, so the next release wakes
// the one behind it.
func TestLimiterHandsOnTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &limiter{n: 1, cfg: limitConfig{wait: time.Minute}, sems: make(map[string]*toolSem)}
		ctx := context.Background()
		held, err := l.acquire(ctx, "a", nil)
		require.NoError(t, err)

		start := time.Now()
		got := make(chan *toolSem)
		go func() {
			s, err := l.acquire(ctx, "a", nil)
			assert.NoError(t, err)
			got <- s
		}()
		synctest.Wait() // the waiter is queued
		l.release("a", held)
		s := <-got
		assert.Zero(t, time.Since(start), "the waiter got the slot when it was released")

		cctx, cancel := context.WithCancelCause(ctx)
		first, second := make(chan error), make(chan *toolSem)
		go func() {
			_, err := l.acquire(cctx, "a", nil)
			first <- err
		}()
		synctest.Wait()
		go func() {
			s, err := l.acquire(ctx, "a", nil)
			assert.NoError(t, err)
			second <- s
		}()
		synctest.Wait() // both wait, the first ahead
		stop := errors.New("stop")
		cancel(stop)
		require.ErrorIs(t, <-first, stop)
		l.release("a", s)
		next := <-second
		assert.Zero(t, time.Since(start), "the second waiter was let in without waiting out its time")
		l.release("a", next)
	})
}
