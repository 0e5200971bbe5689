package streamable

import (
	"hash/maphash"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// A notifications/cancelled that matches no request here is published to
// every replica (RelayCancel): without a bound, the cheapest request there
// is, a cancel of a random id, would cost a round trip on each of them.
// Each caller (its principal, else its address) may have
// cancelRelayPerCaller relayed a second (in bursts of
// cancelRelayCallerBurst), and the Endpoint cancelRelayRate in all; the
// rest are ignored and counted (RejectCancelRelayLimit). A client cancels a
// handful of requests a second at most; the one that sends more is the
// one refused. Callers share cancelRelayBuckets buckets, picked by a hash
// of a seed of the Endpoint's own, which no client can choose: nothing a
// client names becomes a key, and the table's size is fixed.
const (
	cancelRelayPerCaller   = 10
	cancelRelayCallerBurst = 20
	cancelRelayRate        = 200
	cancelRelayBurst       = 400
	cancelRelayBuckets     = 256
)

// cancelRelayBudget bounds the cancels an Endpoint relays, for each
// caller and in all. It is safe for concurrent use.
type cancelRelayBudget struct {
	seed    maphash.Seed
	mu      sync.Mutex
	all     *rate.Limiter
	callers [cancelRelayBuckets]*rate.Limiter // made on first use
}

func newCancelRelayBudget() *cancelRelayBudget {
	return &cancelRelayBudget{seed: maphash.MakeSeed(), all: rate.NewLimiter(cancelRelayRate, cancelRelayBurst)}
}

// allow reports whether a cancel of caller may be relayed at now, and
// takes it from the budgets when it may.
func (b *cancelRelayBudget) allow(caller string, now time.Time) bool {
	i := maphash.String(b.seed, caller) % cancelRelayBuckets
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.callers[i]
	if l == nil {
		l = rate.NewLimiter(cancelRelayPerCaller, cancelRelayCallerBurst)
		b.callers[i] = l
	}
	if l.TokensAt(now) < 1 || b.all.TokensAt(now) < 1 {
		return false
	}
	l.AllowN(now, 1)
	b.all.AllowN(now, 1)
	return true
}
