package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
)

// tracingConfig is what Tracing and TracingCalls use of the options.
type tracingConfig struct {
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
}

func newTracingConfig(opts []Option) tracingConfig {
	cfg := newConfig(opts)
	c := tracingConfig{provider: cfg.provider, propagator: cfg.propagator}
	// Reading the globals (never setting them) is the OTel contrib norm for
	// defaults: library code stays free of otel.Set*.
	if c.provider == nil {
		c.provider = otel.GetTracerProvider()
	}
	if c.propagator == nil {
		c.propagator = otel.GetTextMapPropagator()
	}
	return c
}

func (c tracingConfig) tracer() trace.Tracer { return c.provider.Tracer(telemetry.ScopeName) }

// Tracing returns middleware that gives every request and notification one
// span of kind SERVER, named and attributed per the OpenTelemetry semantic
// conventions for MCP: "{mcp.method.name} {target}" (the tool or prompt
// name), with mcp.method.name, jsonrpc.request.id, mcp.session.id,
// mcp.protocol.version, gen_ai.tool.name, gen_ai.prompt.name,
// gen_ai.operation.name, mcp.resource.uri, network.transport and, on
// failure, error.type and rpc.response.status_code. When the request was
// authorized (an [auth.Principal] in its arrival context), the span also
// gets user.id (the principal's subject) and vigil.oauth.client_id (the
// OAuth client its token was issued to).
//
// The parent is the context in the request's params._meta (traceparent,
// tracestate, baggage), read with the configured propagator; the ambient
// span is then a link. Without one in _meta, the ambient span is the
// parent, as it always is with [WithUntrustedTraceContext]. The ambient span is the one in the context the message arrived
// with ([server.Request.ArrivalContext]): over Streamable HTTP, the span of
// the very POST that carried it (an otelhttp server span, say), even in a
// 2025 session whose context came from the POST that opened it; over other
// transports, the span in the context the session was served with.
//
// The span ends at the instant the request's fate is sealed
// ([server.Request.AfterDone], which with [server.WithOutcomeBatches] runs
// in the request's batch), so it covers writing the response. Its status
// is Error exactly when error.type is set: a JSON-RPC error (error.type is
// the code, such as "-32602"; a panic is "-32603" with an exception event)
// or a tool result with isError ("tool_error"). A cancellation is not an
// error: the status stays Unset, the span gets the attribute
// vigil.cancel.cause and a "cancelled" event. A handler timeout answered
// with -32001 is both an error and a "cancelled" event with cause
// "timeout". A response that was not written adds a "response_dropped"
// event with vigil.drop.reason.
//
// Messages the core refuses before the chain runs (malformed, a duplicate
// id, over a limit, before initialize) get no span; the server's Observer
// sees them.
//
// It reads [WithTracerProvider] and [WithPropagators]. Put Tracing first
// (outermost) in the chain. The returned middleware is safe for concurrent
// use. Add [TracingCalls] with the same options to trace the server's
// requests to the client; [NewInstrumentation] does both.
func Tracing(opts ...Option) server.Middleware {
	st := newServerSpanStarter(opts)
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			ctx, span := st.start(ctx, req, principalOf(req))
			// One allocation: the closure holds span and req by value.
			req.AfterDone(func(out server.Outcome) { endServerSpan(span, req, out) })
			return next(ctx, req)
		}
	}
}

// appendNetwork adds network.transport (and network.protocol.name) from
// the transport named in the session's context ([ContextWithTransport],
// which [CountConns] sets): "pipe" for stdio and memory, "tcp" over "http"
// for Streamable HTTP. Without a name, a session served from an HTTP
// request's context gets its listener's network over "http"; otherwise the
// attributes are left out.
func appendNetwork(ctx context.Context, attrs []attribute.KeyValue) []attribute.KeyValue {
	switch TransportFromContext(ctx) {
	case telemetry.TransportStdio, telemetry.TransportMemory:
		return append(attrs, semconv.NetworkTransportPipe)
	case telemetry.TransportStreamableHTTP:
		return append(attrs, semconv.NetworkTransportTCP, semconv.NetworkProtocolNameKey.String("http"))
	}
	if addr, ok := ctx.Value(http.LocalAddrContextKey).(net.Addr); ok && addr != nil {
		return append(attrs, semconv.NetworkTransportKey.String(addr.Network()), semconv.NetworkProtocolNameKey.String("http"))
	}
	return attrs
}

func endServerSpan(span trace.Span, req *server.Request, out server.Outcome) {
	if req.Method == "initialize" && req.Session != nil {
		if v := req.Session.ProtocolVersion(); v != "" { // negotiated by this request
			span.SetAttributes(telemetry.MCPProtocolVersionKey.String(v))
		}
	}
	err := out.Err
	cause := out.Cause
	if cause == nil && err != nil && server.ReasonOfCause(err) == protocol.ReasonTimeout {
		cause = err // the handler ran out of time inside the chain
	}
	if cause != nil {
		reason := telemetry.CancelCauseKey.String(server.ReasonOfCause(cause).String())
		span.SetAttributes(reason)
		span.AddEvent(telemetry.EventCanceled, trace.WithAttributes(reason))
	}
	switch {
	case out.Cause != nil:
		// Cancelled before the chain returned: nothing is answered, and a
		// cancellation is not a server error, so the status stays Unset.
	case err != nil:
		setErrorStatus(span, err, !req.IsNotification())
	case out.ToolError():
		span.SetAttributes(semconv.ErrorTypeKey.String(telemetry.ErrorTypeTool))
		span.SetStatus(codes.Error, "")
	}
	if out.Dropped != protocol.DropNone {
		attrs := []attribute.KeyValue{telemetry.DropReasonKey.String(out.Dropped.String())}
		if out.WriteErr != nil {
			attrs = append(attrs, semconv.ExceptionMessageKey.String(out.WriteErr.Error()))
		}
		span.AddEvent(telemetry.EventResponseDropped, trace.WithAttributes(attrs...))
	}
	// At the outcome's instant, which the log line and metrics share, and
	// not whenever this runs (in a batch, see server.WithOutcomeBatches).
	span.End(trace.WithTimestamp(out.EndTime()))
}

// setErrorStatus marks span failed with err's JSON-RPC code (also as the
// response's status code when answered), and the message the client sees as
// the description. An internal error (a bug, a panic) also gets an exception
// event with what the client does not see.
func setErrorStatus(span trace.Span, err error, answered bool) {
	code := server.CodeOf(err)
	s := strconv.FormatInt(int64(code), 10)
	span.SetAttributes(semconv.ErrorTypeKey.String(s))
	if answered { // a notification's failure has no response, so no status code
		span.SetAttributes(telemetry.RPCResponseStatusCodeKey.String(s))
	}
	e, isErr := errors.AsType[*server.Error](err)
	switch {
	case isErr && e != nil:
		span.SetStatus(codes.Error, e.Message)
		if code == protocol.CodeInternal && e.Unwrap() != nil {
			span.RecordError(e.Unwrap())
		}
	case code == protocol.CodeRequestTimeout:
		span.SetStatus(codes.Error, "request timed out")
	default:
		span.SetStatus(codes.Error, "internal error")
		span.RecordError(err)
	}
}

// metaCarrier reads propagation fields from a request's params._meta. Only
// string values count. It is read-only.
type metaCarrier struct{ meta *server.RequestMeta }

func (m metaCarrier) Get(key string) string {
	raw, ok := m.meta.Get(key)
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func (metaCarrier) Set(string, string) {}

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, m.meta.Len())
	for k := range m.meta.All() {
		keys = append(keys, k)
	}
	return keys
}
