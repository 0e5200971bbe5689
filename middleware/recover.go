package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/vigil-mcp/vigil/server"
)

// PanicError is the error the chain of [NewInstrumentation] returns for a
// handler that panicked: it recovers every panic below the metrics, the
// tracing and the request log, which see it as the error, and logs it at
// Error level with its stack to the logger of [WithRequestLog]. It is not
// a *server.Error, so the client is answered [protocol.CodeInternal] with
// the message "internal error" and nothing of the panic; [errors.As] finds
// it in an Outcome's Err. A handler that calls runtime.Goexit is not
// recovered.
type PanicError struct {
	Value any    // what the handler panicked with
	Stack []byte // the panicking goroutine's stack
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// recoverPanics returns middleware that recovers a panic in the chain below it
// and returns a [*PanicError] instead, which the core answers with
// [protocol.CodeInternal] ("internal error", no detail). It logs the panic
// at Error level with the method, the request id, the value and the stack
// to logger, with the handler's context (so that a [LogHandler] adds the
// trace and span ids); a nil logger discards the record. A panic it
// catches never reaches the core, so the server's Observer is not told
// (HandlerPanicked). NewInstrumentation places it inside the metrics and
// the tracing, so that they see the panic as an error
// return. A handler that calls runtime.Goexit is not recovered. The
// returned middleware is safe for concurrent use.
func recoverPanics(logger *slog.Logger) server.Middleware {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (res any, err error) {
			defer func() {
				if v := recover(); v != nil {
					stack := debug.Stack()
					logger.ErrorContext(ctx, "handler panicked",
						"method", req.Method, "id", req.ID.String(), "panic", v, "stack", string(stack))
					res, err = nil, &PanicError{Value: v, Stack: stack}
				}
			}()
			return next(ctx, req)
		}
	}
}
