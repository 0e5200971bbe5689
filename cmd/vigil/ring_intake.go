package main

import (
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The ring's lock is taken for every span the binary ends, on every core.
// A goroutine that finds it held does not wait: it leaves its span on the
// ring's intake (a lock-free stack) and goes on, and whoever holds the
// lock stores the spans left there before it lets go. Under load, waiting
// for the lock was the costliest part of ending a span: a waiter parks,
// and once one has waited a millisecond, Go's mutex hands the lock over
// to the waiters one by one, each woken in turn (a convoy), while the
// work done under the lock is well under a microsecond.
//
// No span is left behind: a span is pushed before its goroutine tries the
// lock once more, and every holder looks at the intake after unlocking
// (unlock), so that either the pusher or a holder after it stores it.

// pendingSpan is a span left on the intake, with its facts, read before.
type pendingSpan struct {
	span  sdktrace.ReadOnlySpan
	facts spanFacts
	next  *pendingSpan // the one pushed before it
}

// receive stores s, whose facts are f, now if the lock is free, else
// leaves it for the holder.
func (r *spanRing) receive(s sdktrace.ReadOnlySpan, f *spanFacts) {
	if r.mu.TryLock() {
		r.drainLocked() // those left earlier first, to keep the order
		r.storeLocked(s, f, nil)
		r.unlock()
		return
	}
	p := &pendingSpan{span: s, facts: *f}
	for {
		old := r.intake.Load()
		p.next = old
		if r.intake.CompareAndSwap(old, p) {
			break
		}
	}
	// The holder may have looked at the intake before the push.
	if r.mu.TryLock() {
		r.unlock()
	}
}

// lock locks the ring, with the spans left on the intake stored.
func (r *spanRing) lock() {
	r.mu.Lock()
	r.drainLocked()
}

// unlock stores the spans left on the intake and unlocks the ring; then,
// if more were left meanwhile and the lock is free again, it does the same
// for them.
func (r *spanRing) unlock() {
	for {
		r.drainLocked()
		r.mu.Unlock()
		if r.intake.Load() == nil || !r.mu.TryLock() {
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
