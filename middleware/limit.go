package middleware

import (
	"context"
	"sync"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// limitConfig is what ConcurrencyLimit uses of the options.
type limitConfig struct {
	wait    time.Duration
	forTool func(tool string) int
}

// ConcurrencyLimit returns middleware that lets at most n calls of each
// tool run at once (tools/call only, by tool name; other methods pass).
// A call over its tool's limit is answered [protocol.CodeServerBusy] (-32000,
// "server busy: tool ... is at its concurrency limit") at once, or after
// waiting up to [WithLimitWait] for a slot. A slot is held until the chain
// below returns; for a task-augmented call that is when the task is
// created, not when it finishes.
//
// It reads [WithLimitFor] and [WithLimitWait]. n <= 0 means no default
// limit: without WithLimitFor the middleware is the identity. Memory is
// bounded by the calls in flight: a tool's semaphore exists only while
// calls of it run or wait, so unknown names sent by a client cost nothing
// once answered. The returned middleware is safe for concurrent use; each
// call of ConcurrencyLimit makes independent semaphores.
//
// Place it inside [Timeout] (see [NewInstrumentation]), so that the time a
// call waits for a slot counts against its timeout, and inside
// [RecordMetrics], which then counts rejections as errors with error_type
// -32000.
func ConcurrencyLimit(n int, opts ...Option) server.Middleware {
	c := newConfig(opts)
	cfg := limitConfig{wait: c.limitWait, forTool: c.limitFor}
	if n <= 0 && cfg.forTool == nil {
		return func(next server.Handler) server.Handler { return next }
	}
	l := &limiter{n: n, cfg: cfg, sems: make(map[string]*toolSem)}
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method != "tools/call" || req.IsNotification() {
				return next(ctx, req)
			}
			release, err := l.acquire(ctx, req.Name)
			if err != nil {
				return nil, err
			}
			defer release()
			return next(ctx, req)
		}
	}
}

// limiter holds a semaphore per tool with calls running or waiting.
type limiter struct {
	n   int
	cfg limitConfig

	mu   sync.Mutex
	sems map[string]*toolSem
}

// toolSem is one tool's semaphore; refs counts the calls holding or
// waiting for a slot, and the entry goes when it drops to zero.
type toolSem struct {
	slots chan struct{}
	refs  int
}

// acquire takes a slot for tool, or returns why not; release gives it back.
func (l *limiter) acquire(ctx context.Context, tool string) (release func(), err error) {
	limit := l.n
	if l.cfg.forTool != nil {
		if v := l.cfg.forTool(tool); v != 0 {
			limit = v
		}
	}
	if limit <= 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	s := l.sems[tool]
	if s == nil {
		s = &toolSem{slots: make(chan struct{}, limit)}
		l.sems[tool] = s
	}
	s.refs++
	l.mu.Unlock()
	unref := func() {
		l.mu.Lock()
		s.refs--
		if s.refs == 0 {
			delete(l.sems, tool)
		}
		l.mu.Unlock()
	}
	if err := l.take(ctx, s, tool); err != nil {
		unref()
		return nil, err
	}
	return func() { <-s.slots; unref() }, nil
}

// take waits for a slot of s as configured.
func (l *limiter) take(ctx context.Context, s *toolSem, tool string) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	default:
	}
	if l.cfg.wait <= 0 {
		return busy(tool)
	}
	timer := time.NewTimer(l.cfg.wait)
	defer timer.Stop()
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timer.C:
		return busy(tool)
	}
}

func busy(tool string) error {
	return server.Errorf(protocol.CodeServerBusy, "server busy: tool %q is at its concurrency limit", tool)
}
