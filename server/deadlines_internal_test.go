package server

import (
	"context"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeadlineQueue checks that one timer expires every request at its own
// deadline, in deadline order whatever the order they were set in, that a
// deadline moved earlier is kept, and that a request whose chain returned
// first is never expired (in a synctest bubble: time is virtual and exact).
func TestDeadlineQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &Server{}
		start := time.Now()
		var mu sync.Mutex
		expired := map[string]time.Duration{}
		causes := map[string]error{} // of the expired requests' contexts
		newReq := func(name string) *inflight {
			ctx, cancel := context.WithCancelCause(context.Background())
			inf := &inflight{ctx: ctx, cancel: cancel, ss: &Session{srv: srv}}
			context.AfterFunc(ctx, func() {
				mu.Lock()
				defer mu.Unlock()
				causes[name] = context.Cause(ctx)
				expired[name] = time.Since(start)
			})
			return inf
		}
		late, first, inTime, moved := newReq("late"), newReq("first"), newReq("inTime"), newReq("moved")
		late.setDeadline(start.Add(3 * time.Second))
		first.setDeadline(start.Add(time.Second)) // earlier than the timer is armed for
		inTime.setDeadline(start.Add(2 * time.Second))
		moved.setDeadline(start.Add(2 * time.Second))
		moved.setDeadline(start.Add(1500 * time.Millisecond))
		moved.setDeadline(start.Add(5 * time.Second)) // later: ignored

		time.Sleep(500 * time.Millisecond)
		assert.False(t, inTime.stopWatches(), "the chain returned in time")

		time.Sleep(10 * time.Second)
		synctest.Wait()
		mu.Lock()
		assert.Equal(t, map[string]time.Duration{
			"first": time.Second,
			"moved": 1500 * time.Millisecond,
			"late":  3 * time.Second,
		}, expired)
		got := maps.Clone(causes)
		mu.Unlock()
		for name, cause := range got {
			require.ErrorIs(t, cause, ErrHandlerTimeout, name)
		}
		for _, inf := range []*inflight{first, moved, late} {
			assert.True(t, inf.stopWatches(), "timed out")
		}
		for i := range srv.deadlines {
			q := &srv.deadlines[i]
			q.mu.Lock()
			assert.Nil(t, q.head)
			assert.Nil(t, q.tail)
			assert.True(t, q.armed.IsZero(), "nothing left to fire for")
			q.mu.Unlock()
		}

		// A deadline set after the queue emptied arms the timer again; a
		// request sealed before it is not expired by a late fire.
		again, sealed := newReq("again"), newReq("sealed")
		again.setDeadline(time.Now().Add(time.Second))
		sealed.setDeadline(time.Now().Add(time.Second))
		sealed.mu.Lock()
		sealed.sealed = true // as stopWatches does first, before it takes the request out
		sealed.mu.Unlock()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		mu.Lock()
		require.Contains(t, expired, "again")
		assert.NotContains(t, expired, "sealed")
		mu.Unlock()
		srv.deadlines.stop()
	})
}

// TestDeadlinesSpreadOverQueues checks that requests' deadlines are spread
// over the server's queues, not gathered on one lock, and that each
// request leaves its own queue when its chain returns.
func TestDeadlinesSpreadOverQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &Server{}
		infs := make([]*inflight, 200)
		for i := range infs {
			ctx, cancel := context.WithCancelCause(context.Background())
			infs[i] = &inflight{ctx: ctx, cancel: cancel, ss: &Session{srv: srv}}
			infs[i].setDeadline(time.Now().Add(time.Minute))
		}
		queued := func() (used, total int) {
			for i := range srv.deadlines {
				q := &srv.deadlines[i]
				q.mu.Lock()
				if n := q.lenLocked(); n > 0 {
					used++
					total += n
				}
				q.mu.Unlock()
			}
			return used, total
		}
		used, total := queued()
		assert.Equal(t, len(infs), total, "requests queued")
		assert.Greater(t, used, deadlineQueueCount/2, "queues used by %d requests", len(infs))
		for _, inf := range infs {
			assert.False(t, inf.stopWatches(), "the chain returned in time")
		}
		_, total = queued()
		assert.Zero(t, total, "requests left in a queue")
		srv.deadlines.stop()
	})
}

// TestDeadlineQueueOrder checks the queue's list after deadlines set in
// any order, moved earlier, and requests leaving from anywhere in it: in
// deadline order both ways, every queued request in it once.
func TestDeadlineQueueOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q deadlineQueue
		base := time.Now().Add(time.Hour)
		rng := rand.New(rand.NewPCG(1, 2))
		infs := make([]*inflight, 300)
		for i := range infs {
			infs[i] = &inflight{}
			q.add(infs[i], base.Add(time.Duration(rng.IntN(100))*time.Second))
		}
		for _, inf := range infs[:50] { // moved earlier
			q.add(inf, inf.expiresAt.Add(-time.Duration(rng.IntN(50))*time.Second))
		}
		queued := map[*inflight]bool{}
		for _, inf := range infs {
			queued[inf] = true
		}
		for _, i := range rng.Perm(len(infs))[:150] {
			q.remove(infs[i])
			delete(queued, infs[i])
			q.remove(infs[i]) // twice: a no-op
		}

		q.mu.Lock()
		defer q.mu.Unlock()
		seen := 0
		var prev *inflight
		for inf := q.head; inf != nil; inf = inf.next {
			require.True(t, queued[inf], "a request that left, or never came, is in the list")
			require.Same(t, prev, inf.prev, "back link")
			if prev != nil {
				require.False(t, inf.expiresAt.Before(prev.expiresAt), "out of deadline order")
			}
			prev = inf
			seen++
		}
		assert.Same(t, prev, q.tail)
		assert.Equal(t, len(queued), seen, "requests in the list")
		assert.False(t, q.armed.IsZero() || q.armed.After(q.head.expiresAt), "the timer fires no later than the head's deadline")
		if q.timer != nil {
			q.timer.Stop()
		}
	})
}

// lenLocked counts the requests in q's list; q.mu is held.
func (q *deadlineQueue) lenLocked() int {
	n := 0
	for inf := q.head; inf != nil; inf = inf.next {
		n++
	}
	return n
}
