package oauth

import (
	"context"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"
)

// Defaults of the calls an introspection verifier makes for tokens in
// neither of its caches (VerifierConfig.MissRate and the fields after
// it).
const (
	defaultMissRate      = 20              // calls per second
	defaultMissBurstTime = 2 * time.Second // the bucket holds this long of MissRate
	defaultMissSlots     = 8               // calls in progress at once
	defaultMissWait      = time.Second     // longest wait for the bucket and a slot
	maxMissSources       = 4096            // client addresses tracked at once
)

// missGuard bounds the calls to the authorization server: a token bucket
// and a count of calls in progress, both waited for in arrival order for
// at most wait, and a cap on what one client address may hold (waiting or
// in progress), past which it is refused at once. It is safe for
// concurrent use; a nil *missGuard lets everything through.
type missGuard struct {
	limiter   *rate.Limiter       // nil: no rate limit
	slots     *semaphore.Weighted // nil: no concurrency cap
	perSource int                 // 0: no cap per source
	wait      time.Duration       // <= 0: no wait

	mu      sync.Mutex
	sources map[string]int // outstanding calls by source; never an entry at zero
}

// newMissGuard returns the guard of cfg's Miss* fields, nil when they lift
// every bound.
func newMissGuard(cfg *VerifierConfig) *missGuard {
	g := &missGuard{wait: cfg.MissWait, sources: make(map[string]int)}
	if g.wait == 0 {
		g.wait = defaultMissWait
	}
	r := cfg.MissRate
	if r == 0 {
		r = defaultMissRate
	}
	if r > 0 && !math.IsInf(r, 1) {
		burst := cfg.MissBurst
		if burst <= 0 {
			burst = max(int(math.Ceil(r*defaultMissBurstTime.Seconds())), 1)
		}
		g.limiter = rate.NewLimiter(rate.Limit(r), burst)
	}
	n := cfg.MaxConcurrentMisses
	if n == 0 {
		n = defaultMissSlots
	}
	if n > 0 {
		g.slots = semaphore.NewWeighted(int64(n))
		g.perSource = max(n/2, 1)
	}
	if g.limiter == nil && g.slots == nil {
		return nil
	}
	return g
}

// errVerifierBusy returns the refusal of a call the guard does not let
// through.
func errVerifierBusy() *Error {
	return &Error{Reason: ReasonVerifierBusy, Description: "too many new tokens to verify: try again later"}
}

// acquire waits for the right to call the authorization server on behalf
// of source ("" when unknown: no cap of its own) and returns its release,
// or the refusal of [errVerifierBusy]. ctx bounds the wait besides g.wait.
func (g *missGuard) acquire(ctx context.Context, source string) (func(), error) {
	if g == nil {
		return func() {}, nil
	}
	if !g.enter(source) {
		return nil, errVerifierBusy()
	}
	ok := false
	defer func() {
		if !ok {
			g.leave(source)
		}
	}()
	if g.wait <= 0 {
		if (g.limiter != nil && !g.limiter.Allow()) || (g.slots != nil && !g.slots.TryAcquire(1)) {
			return nil, errVerifierBusy()
		}
	} else {
		wctx, cancel := context.WithTimeout(ctx, g.wait)
		defer cancel()
		// Wait refuses at once, taking nothing, when the bucket cannot
		// give a token before the deadline.
		if g.limiter != nil && g.limiter.Wait(wctx) != nil {
			return nil, errVerifierBusy()
		}
		if g.slots != nil && g.slots.Acquire(wctx, 1) != nil {
			return nil, errVerifierBusy()
		}
	}
	ok = true
	return func() {
		if g.slots != nil {
			g.slots.Release(1)
		}
		g.leave(source)
	}, nil
}

// enter counts one more call of source, unless it holds its share
// already or too many sources are tracked.
func (g *missGuard) enter(source string) bool {
	if source == "" || g.perSource == 0 {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.sources[source]
	if n >= g.perSource || (n == 0 && len(g.sources) >= maxMissSources) {
		return false
	}
	g.sources[source] = n + 1
	return true
}

func (g *missGuard) leave(source string) {
	if source == "" || g.perSource == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if n := g.sources[source] - 1; n > 0 {
		g.sources[source] = n
	} else {
		delete(g.sources, source)
	}
}

// sourceOf returns the client address of conn as a guard source: the IP,
// an IPv6 one reduced to its /64 (what one subscriber usually holds); ""
// when it has none.
func sourceOf(conn net.Conn) string {
	if conn == nil {
		return ""
	}
	addr := conn.RemoteAddr()
	if addr == nil {
		return ""
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return ""
	}
	ip := ap.Addr().Unmap().WithZone("")
	if ip.Is6() {
		ip = netip.PrefixFrom(ip, 64).Masked().Addr()
	}
	return ip.String()
}
