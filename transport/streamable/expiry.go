package streamable

import (
	"container/heap"
	"sync"
	"time"
)

// expiry ends the 2025-era sessions of an Endpoint that see no request for
// the idle timeout. One heap of sessions by deadline and one timer serve
// them all, so that an idle session holds no timer (and no goroutine) of
// its own; the timer is created with the first session and stopped by
// close. A request moves its session's deadline (touch) without taking the
// heap's lock: when the timer comes to a session whose deadline moved, it
// files the session again under the new deadline.
type expiry struct {
	d      time.Duration
	init   time.Duration  // the idle timeout of a session not initialized yet (at most d)
	base   time.Time      // deadlines are monotonic durations since base
	expire func(*session) // ends an expired session; called without mu

	mu     sync.Mutex
	heap   sessionHeap // by due
	timer  *time.Timer // fires at the earliest due; nil before the first session
	closed bool
}

// newExpiry returns the expiry of sessions idle for d, or for init (when
// shorter) until they are initialized, which calls expire for each, or nil
// when neither is > 0 (sessions never expire). With d <= 0, only sessions
// not initialized expire.
func newExpiry(d, init time.Duration, expire func(*session)) *expiry {
	switch {
	case d <= 0 && init <= 0:
		return nil
	case d <= 0:
		d = 1 << 62 // initialized sessions never expire; the others do
	}
	if init <= 0 || init > d {
		init = d
	}
	return &expiry{d: d, init: init, base: time.Now(), expire: expire}
}

// timeout returns the idle timeout of s now.
func (e *expiry) timeout(s *session) time.Duration {
	if s.initialized.Load() {
		return e.d
	}
	return e.init
}

func (e *expiry) now() int64 { return int64(time.Since(e.base)) }

// add starts the idle clock of a new session.
func (e *expiry) add(s *session) {
	if e == nil {
		return
	}
	d := e.timeout(s)
	due := e.now() + int64(d)
	s.deadline.Store(due)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	s.due = due
	heap.Push(&e.heap, s)
	switch {
	case e.timer == nil:
		e.timer = time.AfterFunc(d, e.fire)
	case s.slot == 0: // the heap was empty, or s is due first
		e.timer.Reset(d)
	}
}

// touch restarts the idle clock of s.
func (e *expiry) touch(s *session) {
	if e != nil {
		s.deadline.Store(e.now() + int64(e.timeout(s)))
	}
}

// remove forgets s, which ended.
func (e *expiry) remove(s *session) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.slot >= 0 {
		heap.Remove(&e.heap, s.slot)
	}
}

// fire runs when the earliest deadline filed is due: it ends the sessions
// whose deadline passed, files again those whose deadline moved, and sets
// the timer for the next one.
func (e *expiry) fire() {
	var expired []*session
	e.mu.Lock()
	now := e.now()
	for len(e.heap) > 0 && !e.closed {
		s := e.heap[0]
		if s.due > now {
			e.timer.Reset(time.Duration(s.due - now))
			break
		}
		if deadline := s.deadline.Load(); deadline > now {
			s.due = deadline
			heap.Fix(&e.heap, 0)
			continue
		}
		heap.Pop(&e.heap)
		expired = append(expired, s)
	}
	e.mu.Unlock()
	for _, s := range expired {
		e.expire(s)
	}
}

// maxRetrySessionLimit bounds the Retry-After of an initialize refused at
// the session limit: a session may end sooner than by expiry (DELETE, a
// client that leaves), which the Endpoint cannot foresee.
const maxRetrySessionLimit = time.Minute

// retryAfter returns the Retry-After, in whole seconds, of an initialize
// refused at the session limit: how long until the first session filed is
// due, before which no idle session expires (one touched since is filed
// again, later), between 1 second and maxRetrySessionLimit, which it is
// when sessions never expire.
func (e *expiry) retryAfter() int {
	wait := maxRetrySessionLimit
	if e != nil {
		e.mu.Lock()
		if len(e.heap) > 0 {
			wait = min(wait, time.Duration(e.heap[0].due-e.now()))
		}
		e.mu.Unlock()
	}
	return max(1, int((wait+time.Second-1)/time.Second))
}

// close stops the timer; sessions added afterwards never expire.
func (e *expiry) close() {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	if e.timer != nil {
		e.timer.Stop()
	}
	for _, s := range e.heap {
		s.slot = -1
	}
	e.heap = nil
}

// sessionHeap is a min-heap of sessions by due (container/heap); each
// session knows its slot in it, -1 when it is in none.
type sessionHeap []*session

func (h sessionHeap) Len() int           { return len(h) }
func (h sessionHeap) Less(i, j int) bool { return h[i].due < h[j].due }

func (h sessionHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].slot, h[j].slot = i, j
}

func (h *sessionHeap) Push(x any) {
	s := x.(*session)
	s.slot = len(*h)
	*h = append(*h, s)
}

func (h *sessionHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	s.slot = -1
	return s
}
