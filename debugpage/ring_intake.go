package debugpage

import (
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Spans reach the ring in batches (the package doc says why): a span is
// pushed on the intake, a lock-free stack, and the span that makes it
// ringIntakeBatch deep stores the batch if the lock is free; whoever holds
// the lock stores what is on the intake before it lets go (unlock), and
// every reader takes the lock (lock). No span is left behind: a span is
// pushed before its goroutine tries the lock, and every holder looks at
// the intake after unlocking, so that a full batch is stored by the pusher
// or a holder after it, and a partial one by the next reader or batch.

// ringIntakeBatch is how many spans wait on the intake before one of them
// stores them all.
const ringIntakeBatch = 64

// pendingSpan is a span left on the intake, with its facts, read before.
type pendingSpan struct {
	span  sdktrace.ReadOnlySpan
	facts spanFacts
	next  *pendingSpan // the one pushed before it
	depth int          // spans on the intake with it, itself included
}

// receive leaves s, whose facts are f, on the intake, and stores the
// intake's spans if that makes a batch and the lock is free.
func (r *spanRing) receive(s sdktrace.ReadOnlySpan, f *spanFacts) {
	p := &pendingSpan{span: s, facts: *f}
	for {
		old := r.intake.Load()
		p.next, p.depth = old, 1
		if old != nil {
			p.depth = old.depth + 1
		}
		if r.intake.CompareAndSwap(old, p) {
			break
		}
	}
	// Else the holder stores them when it unlocks.
	if p.depth >= ringIntakeBatch && r.mu.TryLock() {
		r.unlock()
	}
}

// lock locks the ring, with the spans left on the intake stored.
func (r *spanRing) lock() {
	r.mu.Lock()
	r.drainLocked()
}

// unlock stores the spans left on the intake and unlocks the ring; then,
// if a full batch was left meanwhile (its pusher found the lock held) and
// the lock is free again, it does the same for it. A partial batch waits
// for the next reader or batch.
func (r *spanRing) unlock() {
	for {
		r.drainLocked()
		r.mu.Unlock()
		if top := r.intake.Load(); top == nil || top.depth < ringIntakeBatch || !r.mu.TryLock() {
			return
		}
	}
}

// drainLocked stores the spans on the intake, oldest first. r.mu must be
// held.
func (r *spanRing) drainLocked() {
	top := r.intake.Swap(nil)
	if top == nil {
		return
	}
	var oldest *pendingSpan // top's list reversed
	for p := top; p != nil; {
		next := p.next
		p.next, oldest = oldest, p
		p = next
	}
	var last *ringTrace
	for p := oldest; p != nil; p = p.next {
		last = r.storeLocked(p.span, &p.facts, last)
	}
}
