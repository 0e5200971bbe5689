package middleware

import (
	"context"
	"errors"
	"strconv"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/transport/protocol"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
)

// tracingCalls is the call middleware (see [server.WithCallMiddleware]) of
// the CLIENT spans of [WithTracerProvider], with cfg, whose provider and
// propagator are set: each span is named after the method, the child of
// the span in the caller's context, with mcp.method.name,
// jsonrpc.request.id, mcp.session.id, mcp.protocol.version and
// network.transport; its status and error.type follow the client's
// answer, and a call abandoned by a cancellation keeps the status Unset
// and gets a "cancelled" event. It is safe for concurrent use.
func tracingCalls(cfg tracingConfig) server.CallMiddleware {
	tracer := cfg.tracer()
	return func(next server.CallFunc) server.CallFunc {
		return func(ctx context.Context, c *server.ClientCall) error {
			attrs := make([]attribute.KeyValue, 0, 6)
			attrs = append(attrs, mcpconv.MCPMethodNameKey.String(c.Method))
			if c.Session != nil {
				attrs = append(attrs, mcpconv.MCPSessionIDKey.String(c.Session.ID()))
				if v := c.Session.ProtocolVersion(); v != "" {
					attrs = append(attrs, mcpconv.MCPProtocolVersionKey.String(v))
				}
			}
			attrs = appendNetwork(ctx, attrs)
			ctx, span := tracer.Start(ctx, c.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
			defer span.End()
			cfg.propagator.Inject(ctx, callCarrier{c})
			err := next(ctx, c)
			if c.ID.IsValid() {
				span.SetAttributes(mcpconv.JSONRPCRequestIDKey.String(c.ID.String()))
			}
			endClientSpan(span, err)
			return err
		}
	}
}

func endClientSpan(span trace.Span, err error) {
	if err == nil {
		return
	}
	if e, ok := errors.AsType[*server.Error](err); ok && e != nil {
		s := strconv.FormatInt(int64(e.Code), 10)
		span.SetAttributes(semconv.ErrorTypeKey.String(s), mcpconv.RPCResponseStatusCodeKey.String(s))
		span.SetStatus(codes.Error, e.Message)
		return
	}
	reason := server.ReasonOfCause(err)
	switch reason {
	case protocol.ReasonOther:
		span.SetAttributes(semconv.ErrorTypeKey.String(mcpconv.ErrorTypeOther))
		span.SetStatus(codes.Error, err.Error())
		span.RecordError(err)
		return
	case protocol.ReasonTimeout:
		span.SetAttributes(semconv.ErrorTypeKey.String(mcpconv.ErrorTypeTimeout))
		span.SetStatus(codes.Error, err.Error())
	}
	cause := mcpconv.CancelCauseKey.String(reason.String())
	span.SetAttributes(cause)
	span.AddEvent(mcpconv.EventCanceled, trace.WithAttributes(cause))
}

// callCarrier writes propagation fields into a client call's Meta.
type callCarrier struct{ c *server.ClientCall }

func (cc callCarrier) Get(key string) string {
	s, _ := cc.c.Meta[key].(string)
	return s
}

func (cc callCarrier) Set(key, value string) {
	if cc.c.Meta == nil {
		cc.c.Meta = make(map[string]any)
	}
	cc.c.Meta[key] = value
}

func (cc callCarrier) Keys() []string {
	keys := make([]string, 0, len(cc.c.Meta))
	for k := range cc.c.Meta {
		keys = append(keys, k)
	}
	return keys
}
