package overload

import (
	"context"
	"sync/atomic"
)

// Shedding refuses the heaviest callers first (see the package
// documentation): a caller's share of the requests noted in an interval
// is its share of the queue, which is in the kernel, one request per
// waiting connection; what it has in flight is no measure, since a cheap
// request's handler runs within one scheduling turn.

// noted holds the callers of the requests noted in one interval, up to
// twice SamplesPerInterval (as delays).
type noted struct {
	n atomic.Int32
	c [2 * SamplesPerInterval]atomic.Pointer[string]
}

// add notes caller ("": unknown, kept as such), unless the interval has
// as many as it holds.
func (q *noted) add(caller string) {
	if i := q.n.Add(1) - 1; int(i) < len(q.c) {
		var p *string
		if caller != "" {
			p = new(string) // caller itself does not escape: no allocation but here
			*p = caller
		}
		q.c[i].Store(p)
	}
}

// shares is what an interval's notes say of its callers: how many times
// each was noted, in n notes, and the sum of the squared counts.
type shares struct {
	count map[string]int
	n     int
	sumSq int
}

// take returns the shares of the callers noted since the last take, and
// forgets them; nil (refuse uniformly) with fewer than MinQueued callers
// known. A caller noted while it runs goes to this interval or the next.
func (q *noted) take() *shares {
	n := min(int(q.n.Swap(0)), len(q.c))
	s := &shares{count: make(map[string]int)}
	for i := range n {
		if p := q.c[i].Load(); p != nil {
			s.count[*p]++
			s.n++
		}
	}
	if s.n < MinQueued {
		return nil
	}
	for _, c := range s.count {
		s.sumSq += c * c
	}
	return s
}

// refuse reports whether to refuse a request of caller while threshold
// (below full) is the admission threshold: with the callers unknown,
// uniformly (a random uint32 at or over the threshold); else, a caller
// whose share is at least half the mean share, with probability
// (1 - share admitted) × its share / the mean share, which over all the
// requests refuses 1 - share admitted of them.
func (l *Limiter) refuse(threshold uint64, caller string) bool {
	r := uint64(l.cfg.Rand())
	s := l.shares.Load()
	if caller == "" || s == nil {
		return r >= threshold
	}
	c := uint64(max(s.count[caller], 1))
	n, sumSq := uint64(s.n), uint64(s.sumSq)
	// c/n >= sumSq/n² / 2, and r/full < (1-threshold/full) × (c/n) / (sumSq/n²).
	return 2*c*n >= sumSq && r*sumSq < (full-threshold)*c*n
}

// Refusal returns sh's answer to the request of ctx from caller (the
// quotas' caller key; "" when unknown): 0 to admit it, else the
// Retry-After of its refusal, in seconds. A Limiter decides with the
// callers' shares ([Limiter.ShedCaller]); another Shedder, which tells
// only whether, is answered with 1 s.
func Refusal(ctx context.Context, sh interface{ Shed(context.Context) bool }, caller string) int {
	if l, ok := sh.(*Limiter); ok {
		return l.ShedCaller(ctx, caller)
	}
	if sh.Shed(ctx) {
		return 1
	}
	return 0
}
