package server

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// outcomeBatches records the outcomes of a server's requests (their
// AfterDone functions, the observers' RequestEnded) off the requests'
// path, in batches (see [WithOutcomeBatches]): a sealed request is pushed
// on a lock-free list, and the batch runs on a goroutine of its own once
// it holds size requests, or delay after the first of it was pushed, or
// when a reader asks (Server.flushOutcomes, which the observers that read
// what is recorded call through serverhook.Server.Flush). A request's telemetry at its end (its span's
// end, metrics, log line) is code that every request runs once and then
// not again until the next: run back to back for a batch of requests, it
// is fetched into the instruction cache once for all of them, rather than
// once for each, between a request's reading and its answer's writing.
//
// A nil *outcomeBatches has nothing waiting: the server records each
// outcome at once, on the goroutine that sealed the request.
type outcomeBatches struct {
	size   int32
	delay  time.Duration
	logger *slog.Logger
	end    func(*Request, Outcome) // records one outcome (Server.recordEnd)

	// The sealed requests waiting, newest first, linked through
	// Request.afterNext; stopped once the server closed.
	top     atomic.Pointer[Request]
	stopped *Request    // marks top of a closed server: a request sealed after it is recorded at once
	armed   atomic.Bool // timer is set to run the waiting requests
	running atomic.Bool // a goroutine runs full batches (runFull)
	steady  atomic.Bool // the last batch was run by a push, full or half a delay old (see steadyWait)
	timer   *time.Timer

	mu    sync.Mutex // one runner at a time, so that batches run in seal order; guards taken
	taken []*Request

	epoch      time.Time    // lastPush and batchStart count from it, on the monotonic clock
	lastPush   atomic.Int64 // the end of the last request pushed, in ns since epoch
	batchStart atomic.Int64 // the end of the first request waiting, in ns since epoch
}

// sparse is half the delay, the time after which a request no longer
// waits for a timer to be recorded (issue 81: at moderate rates the timer
// was one more wake-up of the process a batch, 0.6 a call at 50 calls a
// second): a request that comes sparse or more after the last, the first
// of its batch, runs at once; a batch that has waited sparse or more runs
// when the next request is pushed. Either runs on a goroutine of its own,
// which runs when the pushing request's goroutine is done or waits, in the
// wake-up that served the request; not on the request's goroutine, whose
// starting stack a span's end and a log line do not fit
// (TestRequestFitsTheStartingStack). The timer remains for the last
// requests before a pause.
func (q *outcomeBatches) sparse() time.Duration { return q.delay / 2 }

// steadyWait is the timer of a batch while the requests come steadily
// (the last batch was run by a push: full, or half a delay old), when
// longer than the delay. The timer is then only for the last requests
// before a pause: the next push runs the batch before it fires, and stops
// it. A timer stopped before it fires still wakes the process when it was
// due: the runtime leaves it in its heap until then (unless a quarter of
// the heap's timers are stopped ones, and every connection's deadline is a
// timer there too), and its monitor thread sleeps until then at most.
// Armed for the delay, once a batch, it was a spurious wake-up of the
// process every few requests (issue 81: at 200 requests a second, 0.9 more
// wake-ups a request of the runtime's monitor thread; docs/perf/ROUNDS.md,
// fifth stop). A request that comes sparse (as the first after a batch
// the timer ran always does) makes the delay apply again.
const steadyWait = 250 * time.Millisecond

// heavyOutcome is the length of a request's params and result together
// from which its outcome runs at once, with those waiting before it,
// rather than waiting for its batch: a large payload (its body, its
// result) is then garbage as soon as it is answered, not held for up to
// the batch's delay, with every other large one answered meanwhile.
const heavyOutcome = 64 << 10

// maxWaitingBatches bounds the requests waiting, in batches: past it, the
// request that pushes runs the waiting ones itself, so that functions
// slower than the requests' arrival hold them back rather than pile them
// up.
const maxWaitingBatches = 8

func newOutcomeBatches(size int, delay time.Duration, logger *slog.Logger, end func(*Request, Outcome)) *outcomeBatches {
	if size <= 1 {
		return nil
	}
	q := &outcomeBatches{size: int32(size), delay: delay, logger: logger, end: end, stopped: new(Request), epoch: time.Now()}
	q.timer = time.AfterFunc(time.Hour, q.runOnGrownStack)
	q.timer.Stop()
	return q
}

// push hands req, sealed with out, to the batches.
func (q *outcomeBatches) push(req *Request, out Outcome) {
	now := int64(out.Ended.Sub(q.epoch)) // the request's end, read once already: no clock read per push
	sparse := now-q.lastPush.Swap(now) >= int64(q.sparse())
	var depth int32
	for {
		next := q.top.Load()
		if next == q.stopped {
			q.runOne(req, out)
			return
		}
		depth = 1
		if next != nil {
			depth = next.afterDepth + 1
		}
		req.afterNext, req.afterDepth, req.afterOut = next, depth, out
		if q.top.CompareAndSwap(next, req) {
			break
		}
	}
	switch {
	case depth >= q.size*maxWaitingBatches || req.heavy:
		q.run()
	case depth%q.size == 0 && !q.running.Load() && q.running.CompareAndSwap(false, true):
		q.steady.Store(true)
		go q.runFullOnGrownStack()
	case depth == 1 && sparse:
		q.steady.Store(false)
		go q.runOnGrownStack()
	case depth == 1:
		q.batchStart.Store(now)
		if !q.armed.Load() && q.armed.CompareAndSwap(false, true) {
			q.timer.Reset(q.wait())
		}
	case now-q.batchStart.Load() >= int64(q.sparse()) && !q.running.Load() && q.running.CompareAndSwap(false, true):
		q.steady.Store(true)
		go q.runFullOnGrownStack()
	}
}

// wait is how long the timer waits for a batch's first request: the delay,
// or steadyWait while the requests come steadily.
func (q *outcomeBatches) wait() time.Duration {
	if q.steady.Load() {
		return max(q.delay, steadyWait)
	}
	return q.delay
}

// recordingStack is the stack a batch's goroutine grows to before it
// records: a goroutine starts on a small stack (the runtime sizes it from
// the average goroutine's), and recording an outcome (a span's end, a log
// line) grew it twice on the way, each time copying the frames above.
// Grown at the goroutine's start, with no frame yet to copy, it grows
// once and for little (issue 81: at 50 calls a second, a batch of one
// for each call). cmd/vigil's TestRequestFitsTheStartingStack checks that
// the shipped service's recording fits in it.
const recordingStack = 8 << 10

// runOnGrownStack is run, and runFullOnGrownStack runFull, for a goroutine
// of their own: they grow its stack first (see recordingStack).
func (q *outcomeBatches) runOnGrownStack()     { growStack(); q.run() }
func (q *outcomeBatches) runFullOnGrownStack() { growStack(); q.runFull() }

// growStack makes a goroutine that has just started hold a stack of
// recordingStack: its frame takes all of it but the room the runtime keeps
// free under a frame (the stack guard) and what the frames below hold.
//
//go:noinline
func growStack() {
	var pad [recordingStack - 2<<10]byte
	keepStack(pad[:])
}

//go:noinline
func keepStack([]byte) {}

// run records the outcome of every request waiting, in the order the
// requests were sealed.
func (q *outcomeBatches) run() {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.armed.Swap(false) { // a request pushed from now on arms the timer again
		q.timer.Stop() // this batch does not need it: no wake-up for nothing
	}
	var top *Request
	for {
		top = q.top.Load()
		if top == nil || top == q.stopped {
			return
		}
		if q.top.CompareAndSwap(top, nil) {
			break
		}
	}
	q.runTaken(top)
}

// runFull runs batches while a full one waits, then returns: one
// goroutine at a time (running), so that batches that fill while one runs
// wait for it in the list, rather than each in a goroutine of its own
// parked on mu.
func (q *outcomeBatches) runFull() {
	for {
		q.run()
		q.running.Store(false)
		// A pusher that filled a batch meanwhile found running set and
		// left the batch to this goroutine.
		top := q.top.Load()
		if top == nil || top == q.stopped || top.afterDepth < q.size || !q.running.CompareAndSwap(false, true) {
			return
		}
	}
}

// stop records the requests waiting and makes later ones recorded at
// once (Server.Close).
func (q *outcomeBatches) stop() {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.timer.Stop()
	if top := q.top.Swap(q.stopped); top != q.stopped {
		q.runTaken(top)
	}
}

// runTaken records the requests of the list top, oldest first; q.mu is
// held.
func (q *outcomeBatches) runTaken(top *Request) {
	taken := q.taken[:0]
	for req := top; req != nil; req = req.afterNext {
		taken = append(taken, req)
	}
	for i := len(taken) - 1; i >= 0; i-- {
		req := taken[i]
		out := req.afterOut
		req.afterNext, req.afterOut = nil, Outcome{}
		q.runOne(req, out)
	}
	clear(taken)
	if cap(taken) <= int(q.size)*maxWaitingBatches {
		q.taken = taken[:0]
	}
}

// runOne records req's outcome; a panic in the recording is logged, and
// the batch goes on.
func (q *outcomeBatches) runOne(req *Request, out Outcome) {
	defer func() {
		if v := recover(); v != nil {
			q.logger.Error("recording an outcome panicked", "method", req.Method, "id", req.ID.String(), "panic", fmt.Sprint(v))
		}
	}()
	q.end(req, out)
}
