package server

import (
	"sync"
	"time"
)

// tokenBucket is a token-bucket rate limiter: it holds up to burst tokens,
// refills at rate tokens per second, and each allowed event takes one. A
// rate <= 0 allows everything. The zero value allows everything; it is safe
// for concurrent use.
type tokenBucket struct {
	mu     sync.Mutex
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time // when tokens was last brought up to date; zero: full
}

// setLimit sets the rate and burst (at least 1) and fills the bucket.
func (b *tokenBucket) setLimit(rate float64, burst int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rate, b.burst = rate, float64(max(burst, 1))
	b.tokens, b.last = b.burst, time.Time{}
}

// allow takes a token at time now if one is left.
func (b *tokenBucket) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rate <= 0 {
		return true
	}
	if b.last.IsZero() {
		b.tokens = b.burst
	} else if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(b.burst, b.tokens+elapsed.Seconds()*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
