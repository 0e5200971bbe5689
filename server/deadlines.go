package server

import (
	"container/heap"
	"math/rand/v2"
	"sync"
	"time"
)

// deadlineQueueCount is how many deadline queues a server spreads its
// requests' deadlines over.
const deadlineQueueCount = 16

// deadlineQueues are a server's deadline queues. Every request with a
// deadline (every request, under middleware.Timeout) takes a queue's lock
// when it starts and when it ends: with a single queue, that lock was the
// one requests waited for most under load (a holder preempted while the
// other cores' requests queue up behind it). Spread over queues picked at
// random, a request rarely meets another at its queue, and each queue
// keeps its own timer, armed for its own earliest deadline.
type deadlineQueues [deadlineQueueCount]struct {
	deadlineQueue
	_ [64]byte // each queue's lock on a cache line of its own
}

// pick returns a queue for a request's deadline.
func (qs *deadlineQueues) pick() *deadlineQueue {
	return &qs[rand.N(len(qs))].deadlineQueue // math/rand/v2's per-thread source: no lock
}

// stop stops every queue's timer (Server.Close).
func (qs *deadlineQueues) stop() {
	for i := range qs {
		qs[i].stop()
	}
}

// deadlineQueue runs deadlines of a server's requests
// (Request.SetDeadline; see deadlineQueues) from one timer, armed for the
// earliest of them, instead of a timer per request: a request that has a deadline costs a
// place in a heap while it runs, and a request that ends in time takes its
// place back without touching the timer. With one timeout for every request
// (middleware.Timeout), each new deadline is the latest, and the timer fires
// about once per timeout, finding the requests it was armed for long gone.
//
// Lock order: an inflight's mu, then the queue's.
type deadlineQueue struct {
	mu    sync.Mutex
	queue deadlineHeap
	timer *time.Timer // made by the first deadline
	armed time.Time   // when timer fires; zero when it is not armed
}

// add queues inf to expire at t, or moves it to t if it is queued; inf.mu
// is held.
func (q *deadlineQueue) add(inf *inflight, t time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	inf.expiresAt = t
	if inf.slot == 0 {
		heap.Push(&q.queue, inf)
	} else {
		heap.Fix(&q.queue, inf.slot-1)
	}
	q.armLocked()
}

// remove takes inf out of the queue, if it is still in it; inf.mu is held.
func (q *deadlineQueue) remove(inf *inflight) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if inf.slot != 0 { // fire may have taken it already
		heap.Remove(&q.queue, inf.slot-1)
	}
}

// armLocked makes the timer fire at the earliest deadline, unless it fires
// earlier already (it then re-arms itself).
func (q *deadlineQueue) armLocked() {
	if len(q.queue) == 0 {
		return
	}
	at := q.queue[0].expiresAt
	if !q.armed.IsZero() && !at.Before(q.armed) {
		return
	}
	q.armed = at
	if q.timer == nil {
		q.timer = time.AfterFunc(time.Until(at), q.fire)
		return
	}
	q.timer.Reset(time.Until(at))
}

// fire is the timer: it expires the requests whose deadline passed, and
// arms the timer for the next deadline.
func (q *deadlineQueue) fire() {
	now := time.Now()
	var due []*inflight
	q.mu.Lock()
	q.armed = time.Time{}
	for len(q.queue) > 0 && !q.queue[0].expiresAt.After(now) {
		due = append(due, heap.Pop(&q.queue).(*inflight))
	}
	q.armLocked()
	q.mu.Unlock()
	for _, inf := range due {
		inf.expire()
	}
}

// stop stops the timer (Server.Close): the requests still queued have
// ended with the server's sessions.
func (q *deadlineQueue) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil {
		q.timer.Stop()
	}
	q.armed = time.Time{}
}

// deadlineHeap is a min-heap of requests by expiresAt (container/heap).
// A request's slot is its index in it plus one, 0 when it is not in it;
// both fields are guarded by the queue's mu.
type deadlineHeap []*inflight

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].expiresAt.Before(h[j].expiresAt) }

func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].slot, h[j].slot = i+1, j+1
}

func (h *deadlineHeap) Push(x any) {
	inf := x.(*inflight)
	*h = append(*h, inf)
	inf.slot = len(*h)
}

func (h *deadlineHeap) Pop() any {
	old := *h
	inf := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	inf.slot = 0
	return inf
}
