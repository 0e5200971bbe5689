package overload

import (
	"context"
	"sync/atomic"
)

// Shedding refuses the heaviest callers first. What a request's caller
// holds (its requests in flight, this one included: the quota's count,
// see [Limiter.ShedCaller]) is measured with its queueing delay, on one
// request every Interval/SamplesPerInterval, so that the measures are
// weighted by requests: a caller that sends most of them weighs most.
// While requests are shed, a request whose caller holds no more than the
// measures' mean is admitted, and one whose caller holds more is refused
// with a probability in proportion to what it holds, scaled so that the
// share refused over all the requests is still the Limiter's: one caller
// that holds the queue's places is refused, and the callers it crowds are
// not. With fewer than MinQueued holdings known in an interval (a
// transport that cannot tell them, the quota off), every request is
// refused alike.

// fairFixed is the fixed point of Limiter.mean and Limiter.heavy.
const fairFixed = 1 << 10

// maxHeld bounds a holding, so that the products in refuse stay in 64
// bits.
const maxHeld = 1 << 16

// holdings holds what the callers of the requests measured in one
// interval hold, up to twice SamplesPerInterval (as delays).
type holdings struct {
	n atomic.Int32
	h [2 * SamplesPerInterval]atomic.Int32
}

// add keeps held, unless the interval has as many as it holds; 0
// (unknown) is kept as such.
func (q *holdings) add(held int) {
	if i := q.n.Add(1) - 1; int(i) < len(q.h) {
		q.h[i].Store(int32(min(max(held, 0), maxHeld)))
	}
}

// take returns, from the holdings added since the last take, their mean
// and the sum of those over the mean over how many there were, both times
// fairFixed, and forgets them; 0, 0 (refuse uniformly) with fewer than
// MinQueued known. A holding added while it runs goes to this interval or
// the next.
func (q *holdings) take() (mean, heavy uint64) {
	n := min(int(q.n.Swap(0)), len(q.h))
	var buf [len(q.h)]uint64
	var sum, known uint64
	for i := range n {
		if h := uint64(q.h[i].Load()); h > 0 {
			buf[known] = h
			sum += h
			known++
		}
	}
	if known < MinQueued {
		return 0, 0
	}
	var over uint64
	for _, h := range buf[:known] {
		if h*known > sum {
			over += h
		}
	}
	return sum * fairFixed / known, over * fairFixed / known
}

// refuse reports whether to refuse a request whose caller holds held
// while threshold (below full) is the admission threshold: with the
// holdings unknown, uniformly (a random uint32 at or over the threshold);
// else a caller holding more than the mean with probability
// (1 - share) × held / (heavy/fairFixed), which over all the requests
// refuses 1 - share of them, and never one holding less.
func (l *Limiter) refuse(threshold uint64, held int) bool {
	r := uint64(l.cfg.Rand())
	mean, heavy := l.mean.Load(), l.heavy.Load()
	if held <= 0 || heavy == 0 {
		return r >= threshold
	}
	h := uint64(min(held, maxHeld))
	return h*fairFixed > mean && r*heavy < (full-threshold)*h*fairFixed
}

// Refusal returns sh's answer to the request of ctx whose caller holds
// held: 0 to admit it, else the Retry-After of its refusal, in seconds. A
// Limiter decides with what the caller holds ([Limiter.ShedCaller]);
// another Shedder, which tells only whether, is answered with 1 s.
func Refusal(sh interface{ Shed(context.Context) bool }, ctx context.Context, held int) int {
	if l, ok := sh.(*Limiter); ok {
		return l.ShedCaller(ctx, held)
	}
	if sh.Shed(ctx) {
		return 1
	}
	return 0
}
