package server

import "time"

// tokenBucket is a token-bucket rate limiter's state: it holds up to
// burst tokens, refills at rate tokens per second, and each allowed event
// takes one; the rate and burst are its owner's, given at each event. The
// zero value is full. It is not safe for concurrent use: its owner's lock
// guards it.
type tokenBucket struct {
	tokens float64
	last   time.Time // when tokens was last brought up to date; zero: full
}

// allow takes a token at time now if one is left, for a bucket of burst
// tokens (at least 1) refilled at rate per second; a rate <= 0 allows
// everything.
func (b *tokenBucket) allow(now time.Time, rate float64, burst int) bool {
	if rate <= 0 {
		return true
	}
	full := float64(max(burst, 1))
	if b.last.IsZero() {
		b.tokens = full
	} else if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(full, b.tokens+elapsed.Seconds()*rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
