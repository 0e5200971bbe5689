package middleware

import (
	"context"
	"errors"
	"time"

	"github.com/vigil-mcp/vigil/server"
)

// Timeout returns middleware that gives each request d from when the core
// read it ([server.Request.Received]): past it, the handler's context is
// cancelled with the cause [server.ErrHandlerTimeout] (its Err is
// [context.DeadlineExceeded], as with [context.WithTimeoutCause]), and the
// request is answered with [protocol.CodeRequestTimeout] (-32001) whatever
// the handler returned. It does not answer before the handler returns:
// handlers must watch their context. A request cancelled for another
// reason first keeps that cause. d <= 0 means no default timeout: without
// [WithTimeoutFor] the middleware is the identity. Notifications are never
// timed out; a task-augmented tools/call is bounded until it returns its
// task. It uses the request's own deadline ([server.Request.SetDeadline]),
// with no timer or goroutine per request. Place it inside the metrics
// and [Tracing], as [NewInstrumentation] does. The returned middleware is
// safe for concurrent use.
func Timeout(d time.Duration, opts ...TimeoutOption) server.Middleware {
	return timeout(d, configure(opts, TimeoutOption.applyTimeout))
}

// timeout is the middleware of [Timeout] with cfg.
func timeout(d time.Duration, cfg timeoutConfig) server.Middleware {
	forReq := cfg.forRequest
	if d <= 0 && forReq == nil {
		return func(next server.Handler) server.Handler { return next }
	}
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.IsNotification() {
				return next(ctx, req)
			}
			limit := d
			if forReq != nil {
				if v := forReq(req); v != 0 {
					limit = v
				}
			}
			if limit <= 0 {
				return next(ctx, req)
			}
			start := req.Received
			if start.IsZero() {
				start = time.Now()
			}
			req.SetDeadline(start.Add(limit))
			res, err := next(ctx, req)
			// Err first: nil for a request in time, without Cause's lock.
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.Is(context.Cause(ctx), server.ErrHandlerTimeout) {
				return nil, server.ErrHandlerTimeout // as the core will answer
			}
			return res, err
		}
	}
}
