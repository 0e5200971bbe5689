package middleware

import (
	"context"
	"errors"
	"time"

	"github.com/vigil-mcp/vigil/server"
)

// Timeout returns middleware that gives each request d to be served:
// past it, the handler's context is cancelled with the cause
// [server.ErrHandlerTimeout] (its Err is [context.DeadlineExceeded] and its
// Deadline reports the deadline, as with [context.WithTimeoutCause]), and
// the request is answered with [protocol.CodeRequestTimeout] (-32001,
// "request timed out") whatever the handler returned, since its work was
// cut short. It does not answer before the handler returns: handlers must
// watch their context. A request cancelled for another reason first (a
// client cancel, a closed transport) keeps that cause and is not answered,
// as usual. The time counts from when the core read the request
// ([server.Request.Received]).
//
// The deadline is the request context's own ([server.Request.SetDeadline]):
// no context, no timer and no goroutine per request (the server runs every
// request's deadline from one timer).
//
// It reads [WithTimeoutFor]. d <= 0 means no default timeout: without
// WithTimeoutFor the middleware is the identity. Notifications are never
// timed out. A task-augmented tools/call is bounded only until it returns
// its task; the task runs on under its own context. The returned
// middleware is safe for concurrent use.
//
// Place it inside [RecordMetrics] and [Tracing] (see [NewInstrumentation]):
// they then count the request as a cancellation with cause timeout and
// outcome error, and the span gets the "cancelled" event with cause
// timeout.
func Timeout(d time.Duration, opts ...Option) server.Middleware {
	forReq := newConfig(opts).timeoutFor
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
