package server

import (
	"math/rand/v2"
	"sync"
	"time"
)

// deadlineQueueCount is how many deadline queues a server spreads its
// requests' deadlines over.
const deadlineQueueCount = 16

// deadlineQueues are a server's deadline queues. Every request with a
// deadline (every request, under WithTimeout) takes a queue's lock
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
// earliest of them, instead of a timer per request: a request that has a
// deadline costs a place in the queue while it runs, and a request that
// ends in time takes its place back without touching the timer.
//
// The queue is a list in deadline order, linked through the requests
// themselves (the package doc says why not a heap): a new deadline walks
// back from the tail to its place, and a request leaves from wherever it
// is, at once.
//
// Lock order: an inflight's mu, then the queue's.
type deadlineQueue struct {
	mu         sync.Mutex
	head, tail *inflight   // in expiresAt order, through inflight.prev and next
	timer      *time.Timer // made by the first deadline
	armed      time.Time   // when timer fires; zero when it is not armed
}

// add queues inf to expire at t, or moves it to t if it is queued; inf.mu
// is held.
func (q *deadlineQueue) add(inf *inflight, t time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if inf.queued {
		q.unlinkLocked(inf)
	}
	inf.expiresAt = t
	after := q.tail // the last request due no later than t
	for after != nil && after.expiresAt.After(t) {
		after = after.prev
	}
	inf.prev = after
	if after == nil {
		inf.next, q.head = q.head, inf
	} else {
		inf.next, after.next = after.next, inf
	}
	if inf.next == nil {
		q.tail = inf
	} else {
		inf.next.prev = inf
	}
	inf.queued = true
	q.armLocked()
}

// remove takes inf out of the queue, if it is still in it; inf.mu is held.
func (q *deadlineQueue) remove(inf *inflight) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if inf.queued { // fire may have taken it already
		q.unlinkLocked(inf)
	}
}

// unlinkLocked takes the queued inf out of the list; q.mu is held.
func (q *deadlineQueue) unlinkLocked(inf *inflight) {
	if inf.prev == nil {
		q.head = inf.next
	} else {
		inf.prev.next = inf.next
	}
	if inf.next == nil {
		q.tail = inf.prev
	} else {
		inf.next.prev = inf.prev
	}
	inf.prev, inf.next, inf.queued = nil, nil, false
}

// armLocked makes the timer fire at the earliest deadline, unless it fires
// earlier already (it then re-arms itself).
func (q *deadlineQueue) armLocked() {
	if q.head == nil {
		return
	}
	at := q.head.expiresAt
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
	for q.head != nil && !q.head.expiresAt.After(now) {
		inf := q.head
		q.unlinkLocked(inf)
		due = append(due, inf)
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
