package middleware

import (
	"context"
	"errors"
	"time"

	"github.com/vigil-mcp/vigil/server"
)

// timeout is the middleware of [WithTimeout] and [WithTimeoutFor], with d
// the default. NewInstrumentation places it inside the metrics and
// tracing. It is safe for concurrent use.
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
