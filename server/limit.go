package server

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/quota"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// limitConfig is what WithLimitFor, WithLimitWait and WithToolShare set.
type limitConfig struct {
	wait    time.Duration
	forTool func(tool string) int
	shareOf func(*Request) string // WithToolShare
	share   float64
}

// WithConcurrencyLimit lets at most n calls of each tool run at once
// (tools/call only, by tool name; other methods pass), over all sessions
// of the server. A call over its tool's limit is answered
// [protocol.CodeServerBusy] (-32000, "server busy: tool ... is at its
// concurrency limit") at once, or after waiting up to [WithLimitWait] for
// a slot; a slot is taken after the middleware chain ([WithMiddleware])
// and held until the tool's handler returns (for a task-augmented call,
// until its task is created), so that the chain counts a refusal as an
// error and a [WithTimeout] covers the wait. Its memory is bounded by the
// calls in flight and the server's tools: the semaphore of a registered
// tool is kept once made (up to 1024 of them), that of any other name only
// while calls of it run or wait; taking and giving back a slot of a
// registered tool takes no lock. n <= 0 means no default limit, the
// default (see [WithLimitFor]).
func WithConcurrencyLimit(n int) Option {
	return optionFunc(func(c *config) { c.limitN = n })
}

// WithLimitFor sets a per-tool limit for [WithConcurrencyLimit]'s part
// (and adds it, without WithConcurrencyLimit): f returns how many calls of
// tool may run at once, 0 for the default, or a negative number for no
// limit. It is called concurrently, with the name as the client sent it,
// and must be safe for that; it should give a tool the same limit every
// time (a tool's semaphore is sized by the call that creates it). A nil f
// is ignored.
func WithLimitFor(f func(tool string) int) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.limit.forTool = f
		}
	})
}

// WithLimitWait makes a call over its tool's [WithConcurrencyLimit] wait
// up to d for a slot instead of being rejected at once (waiters are not
// served in arrival order). It is rejected when d passes first; if its
// context ends first (a client cancel, a [WithTimeout]), it returns the
// context's cause. d <= 0 means reject at once, the default.
func WithLimitWait(d time.Duration) Option {
	return optionFunc(func(c *config) { c.limit.wait = d })
}

// WithToolShare gives each caller at most share (0 < share < 1) of each
// tool's slots of [WithConcurrencyLimit]: a call whose caller holds its
// share already is refused at once, without waiting, with
// QuotaRefusal(protocol.QuotaToolShare), so that one caller's calls never
// take the slots another caller's call needs. A tool's share is rounded
// up, and at least one slot. key names the caller of a request (such as
// its principal, or its client's address) and must be fast and safe for
// concurrent use. A nil key, or a share out of range, means no share (the
// default).
func WithToolShare(share float64, key func(req *Request) string) Option {
	return optionFunc(func(cfg *config) {
		c := &cfg.limit
		if key == nil || !(share > 0 && share < 1) {
			c.shareOf, c.share = nil, 0
			return
		}
		c.shareOf, c.share = key, share
	})
}

// concurrencyLimit is the middleware of [WithConcurrencyLimit] and
// [WithLimitFor], with n the default; each call makes independent
// semaphores. New places it inside the middleware chain, around the
// methods' own handlers. It is safe for concurrent use.
func concurrencyLimit(n int, cfg limitConfig) Middleware {
	if n <= 0 && cfg.forTool == nil {
		return func(next Handler) Handler { return next }
	}
	l := newLimiter(n, cfg)
	return func(next Handler) Handler {
		return func(ctx context.Context, req *Request) (any, error) {
			if req.Method != "tools/call" || req.IsNotification() {
				return next(ctx, req)
			}
			s, hold, err := l.acquireAs(ctx, req.Name, req.Session, req)
			if err != nil {
				return nil, err
			}
			if s != nil {
				defer l.releaseHold(req.Name, s, hold)
			}
			return next(ctx, req)
		}
	}
}

// maxPinnedTools bounds the semaphores a limiter keeps for registered
// tools: a server that registers ever new tools must not grow it without
// end. Beyond it, they come and go as those of unknown names do.
const maxPinnedTools = 1024

// limiter holds a semaphore per tool: kept (pinned) for the tools the
// session's server has registered, and for other names only while calls
// of them run or wait.
type limiter struct {
	n   int
	cfg limitConfig

	// pinned is read without locking and copied on write, under mu.
	pinned atomic.Pointer[map[string]*toolSem]

	mu   sync.Mutex
	sems map[string]*toolSem // not pinned; guarded by mu
}

func newLimiter(n int, cfg limitConfig) *limiter {
	return &limiter{n: n, cfg: cfg, sems: make(map[string]*toolSem)}
}

// toolSem is one tool's semaphore: inUse counts the slots taken, up to
// limit, with atomic operations; calls waiting for a slot queue in waiters.
type toolSem struct {
	limit  int64
	pinned bool
	inUse  atomic.Int64
	// waiting is len(waiters), readable without the lock: a release looks
	// at it to know whether to wake a waiter.
	waiting atomic.Int64

	mu      sync.Mutex // guards waiters
	waiters []chan struct{}

	callers *quota.Counter // the slots each caller holds (WithToolShare); nil: no share

	refs int // for a semaphore not pinned: the calls holding or waiting for a slot; guarded by limiter.mu
}

// acquire takes a slot for tool, or returns why not; nil and no error
// means tool has no limit. Give the slot back with release.
func (l *limiter) acquire(ctx context.Context, tool string, sess *Session) (*toolSem, error) {
	s, _, err := l.acquireAs(ctx, tool, sess, nil)
	return s, err
}

// acquireAs is acquire for the call req (nil: none), which also takes a
// place in its caller's share of the slots (WithToolShare). Give both back
// with releaseHold.
func (l *limiter) acquireAs(ctx context.Context, tool string, sess *Session, req *Request) (*toolSem, quota.Hold, error) {
	s := l.pinnedSem(tool)
	if s == nil {
		limit := l.n
		if l.cfg.forTool != nil {
			if v := l.cfg.forTool(tool); v != 0 {
				limit = v
			}
		}
		if limit <= 0 {
			return nil, quota.Hold{}, nil
		}
		registered := false
		if sess != nil && tool != "" {
			_, registered = sess.Server().Tool(tool)
		}
		s = l.ref(tool, limit, registered)
	}
	var hold quota.Hold
	if s.callers != nil && req != nil {
		var ok bool
		if hold, ok = s.callers.Acquire(l.cfg.shareOf(req)); !ok {
			l.unref(tool, s)
			return nil, hold, QuotaRefusal(protocol.QuotaToolShare, time.Second)
		}
	}
	if err := l.take(ctx, s, tool); err != nil {
		hold.Release()
		l.unref(tool, s)
		return nil, quota.Hold{}, err
	}
	return s, hold, nil
}

// pinnedSem returns the pinned semaphore of tool, nil if there is none.
func (l *limiter) pinnedSem(tool string) *toolSem {
	if m := l.pinned.Load(); m != nil {
		return (*m)[tool]
	}
	return nil
}

// ref returns tool's semaphore, making it (of size limit) if there is
// none; a registered tool's is pinned, any other's counts this call in
// its refs.
func (l *limiter) ref(tool string, limit int, registered bool) *toolSem {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.pinnedSem(tool); s != nil { // pinned by another call meanwhile
		return s
	}
	if s := l.sems[tool]; s != nil {
		s.refs++
		return s
	}
	s := &toolSem{limit: int64(limit)}
	if l.cfg.shareOf != nil {
		s.callers = quota.New(max(1, int(math.Ceil(float64(limit)*l.cfg.share))))
	}
	var old map[string]*toolSem
	if m := l.pinned.Load(); m != nil {
		old = *m
	}
	if registered && len(old) < maxPinnedTools {
		s.pinned = true
		m := make(map[string]*toolSem, len(old)+1)
		for k, v := range old {
			m[k] = v
		}
		m[tool] = s
		l.pinned.Store(&m)
		return s
	}
	s.refs = 1
	l.sems[tool] = s
	return s
}

// unref ends a call's hold on a semaphore not pinned, which goes when no
// call holds or waits for it.
func (l *limiter) unref(tool string, s *toolSem) {
	if s.pinned {
		return
	}
	l.mu.Lock()
	s.refs--
	if s.refs == 0 {
		delete(l.sems, tool)
	}
	l.mu.Unlock()
}

// release gives back a slot taken by acquire.
func (l *limiter) release(tool string, s *toolSem) { l.releaseHold(tool, s, quota.Hold{}) }

// releaseHold gives back a slot and share taken by acquireAs.
func (l *limiter) releaseHold(tool string, s *toolSem, hold quota.Hold) {
	hold.Release()
	s.inUse.Add(-1)
	if s.waiting.Load() > 0 {
		s.wakeOne()
	}
	l.unref(tool, s)
}

// tryTake takes a slot if one is free.
func (s *toolSem) tryTake() bool {
	for {
		n := s.inUse.Load()
		if n >= s.limit {
			return false
		}
		if s.inUse.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// wakeOne tells the first waiter, if any, that a slot was given back.
func (s *toolSem) wakeOne() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiters) == 0 {
		return
	}
	ch := s.waiters[0]
	s.waiters = s.waiters[1:]
	s.waiting.Add(-1)
	ch <- struct{}{} // buffered, and each waiter is queued once at a time
}

// enqueue queues ch as a waiter.
func (s *toolSem) enqueue(ch chan struct{}) {
	s.mu.Lock()
	s.waiters = append(s.waiters, ch)
	s.waiting.Add(1)
	s.mu.Unlock()
}

// dequeue takes ch out of the queue; false if a release took it out
// first, and so sent it a wake-up that it will not use.
func (s *toolSem) dequeue(ch chan struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.waiters {
		if c == ch {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			s.waiting.Add(-1)
			return true
		}
	}
	return false
}

// take takes a slot of s as configured: at once, or waiting up to the
// configured wait while ctx lasts. A waiter queues before it looks for a
// free slot again, so that a release in between wakes it.
func (l *limiter) take(ctx context.Context, s *toolSem, tool string) error {
	if s.tryTake() {
		return nil
	}
	if l.cfg.wait <= 0 {
		return busy(tool)
	}
	timer := time.NewTimer(l.cfg.wait)
	defer timer.Stop()
	ch := make(chan struct{}, 1)
	for {
		s.enqueue(ch)
		if s.tryTake() {
			s.leave(ch)
			return nil
		}
		select {
		case <-ch: // woken: a slot was given back; try again
			continue
		case <-ctx.Done():
			s.leave(ch)
			return context.Cause(ctx)
		case <-timer.C:
			s.leave(ch)
			return busy(tool)
		}
	}
}

// leave takes ch out of the queue without using a wake-up: one sent to it
// is passed on to the next waiter.
func (s *toolSem) leave(ch chan struct{}) {
	if !s.dequeue(ch) {
		<-ch // sent under s.mu when it was taken out of the queue
		if s.inUse.Load() < s.limit {
			s.wakeOne()
		}
	}
}

func busy(tool string) error {
	return Errorf(protocol.CodeServerBusy, "server busy: tool %q is at its concurrency limit", tool)
}
