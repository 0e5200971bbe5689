package serverhook

import "context"

// EndsKey is the context key under which the context of a request's
// handler holds the request's *Ends.
type EndsKey struct{}

// Ends holds the functions that run with a request's outcome O: those
// given to OnDone at once, on the goroutine that sealed the outcome, then
// those given to AfterDone, possibly later, in a batch of requests. Its
// zero value is ready, and its first functions need no allocation. The
// methods of a nil *Ends do nothing.
type Ends[O any] struct {
	done  []func(O)
	after []func(O)
	// The first functions need no allocation: in cmd/vigil, the audit
	// log's for done; tracing, metrics and logging, and the live page's
	// counts, for after.
	doneBuf  [2]func(O)
	afterBuf [4]func(O)
}

// Of returns the Ends of the request whose handler's context is ctx (or
// derives from it), nil outside a request.
func Of[O any](ctx context.Context) *Ends[O] {
	e, _ := ctx.Value(EndsKey{}).(*Ends[O])
	return e
}

// OnDone registers f to run once the request's fate is sealed: after its
// response was written, or the decision not to write one was made, on the
// goroutine that sealed it, after the server's observers were told of a
// cancel or a drop. Middleware calls it on the request's way in, from the
// goroutine running the chain.
func (e *Ends[O]) OnDone(f func(O)) {
	if e == nil {
		return
	}
	if e.done == nil {
		e.done = e.doneBuf[:0]
	}
	e.done = append(e.done, f)
}

// AfterDone registers f to run with the request's outcome after its
// OnDone functions, for what only records the outcome (a span's end,
// metrics, a log line) and need not run before the request's goroutine
// moves on: right after the OnDone functions, or with the server's
// outcome batches (server.WithOutcomeBatches) later, in a batch, on a
// goroutine of the server's, in the order the requests were sealed. f must
// then not block; a panic in f is logged, not raised; f must take the
// request's end from the outcome, not from the clock.
func (e *Ends[O]) AfterDone(f func(O)) {
	if e == nil {
		return
	}
	if e.after == nil {
		e.after = e.afterBuf[:0]
	}
	e.after = append(e.after, f)
}

// RunDone runs the OnDone functions with o, in the order they were given.
func (e *Ends[O]) RunDone(o O) {
	for _, f := range e.done {
		f(o)
	}
}

// HasAfter reports whether AfterDone was given a function.
func (e *Ends[O]) HasAfter() bool { return len(e.after) > 0 }

// RunAfter runs the AfterDone functions with o, in the order they were
// given.
func (e *Ends[O]) RunAfter(o O) {
	for _, f := range e.after {
		f(o)
	}
}

// ForgetDone drops the OnDone functions, for a copy of the request that
// must not run (nor share the storage of) the original's.
func (e *Ends[O]) ForgetDone() { e.done = nil }
