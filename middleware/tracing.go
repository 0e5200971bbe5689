package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/serverhook"
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

// tracingConfig is what the options of Tracing and TracingCalls set.
type tracingConfig struct {
	provider   trace.TracerProvider          // nil: no tracing
	propagator propagation.TextMapPropagator // nil: the global one
	untrusted  bool                          // WithUntrustedTraceContext; Tracing only
	capture    Redactor                      // WithContentCapture; nil: off; Tracing only
}

// withGlobals returns c with the OTel global propagator in place of a nil
// one. Reading the globals (never setting them) is the OTel contrib norm
// for defaults: library code stays free of otel.Set*.
func (c tracingConfig) withGlobals() tracingConfig {
	if c.propagator == nil {
		c.propagator = otel.GetTextMapPropagator()
	}
	return c
}

func (c tracingConfig) tracer() trace.Tracer { return c.provider.Tracer(mcpconv.ScopeName) }

// tracing is the SERVER spans of [WithTracerProvider], started by st.
// Messages refused before the chain get no span; a cancellation leaves
// the status Unset and adds a "cancelled" event. NewInstrumentation puts
// it first (outermost). It is safe for concurrent use.
func tracing(st spanStarter) server.Middleware {
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			ctx, span, start := st.start(ctx, req)
			// One allocation: the closure holds what it uses by value.
			serverhook.Of[server.Outcome](ctx).AfterDone(func(out server.Outcome) {
				st.attributes(ctx, span, start, req, principalOf(req))
				if st.capture != nil {
					captureContent(st.capture, span, req, out)
				}
				endServerSpan(span, req, out)
			})
			return next(ctx, req)
		}
	}
}

// appendNetwork adds network.transport (and network.protocol.name) from
// the transport named in the session's context (mcpconv.ContextWithTransport,
// which [Instrumentation.ConnServer] sets): "pipe" for stdio and memory, "tcp" over "http"
// for Streamable HTTP. Without a name, a session served from an HTTP
// request's context gets its listener's network over "http"; otherwise the
// attributes are left out.
func appendNetwork(ctx context.Context, attrs []attribute.KeyValue) []attribute.KeyValue {
	switch mcpconv.TransportFromContext(ctx) {
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
			span.SetAttributes(mcpconv.MCPProtocolVersionKey.String(v))
		}
	}
	// Everything at the outcome's instant, which the log line and metrics
	// share, and not whenever this runs (in a batch, see
	// server.WithOutcomeBatches): the events inside the span, at its end.
	end := trace.WithTimestamp(out.Ended)
	err := out.Err
	cause := out.Cause
	if cause == nil && chainCause(err) != protocol.ReasonNone {
		cause = err // the handler ran out of time inside the chain, or its upstream went away
	}
	if cause != nil {
		reason := mcpconv.CancelCauseKey.String(server.ReasonOfCause(cause).String())
		span.SetAttributes(reason)
		span.AddEvent(mcpconv.EventCanceled, trace.WithAttributes(reason), end)
	}
	switch {
	case out.Cause != nil:
		// Cancelled before the chain returned: a cancellation is not a
		// server error, so the status stays Unset. Nothing is answered,
		// unless the transport answered as the session ended under it.
		if answeredCancel(out) {
			span.SetAttributes(mcpconv.RPCResponseStatusCodeKey.String(strconv.FormatInt(int64(server.CodeOf(err)), 10)))
		}
	case err != nil:
		setErrorStatus(span, err, !req.IsNotification(), end)
	case out.ToolError():
		span.SetStatus(codes.Error, "")
	}
	if _, errType, _ := outcomeLabels(out); errType != "" { // the metrics' error_type, cancelled and dropped included
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
	}
	if out.Dropped != protocol.DropNone {
		attrs := []attribute.KeyValue{mcpconv.DropReasonKey.String(out.Dropped.String())}
		if out.WriteErr != nil {
			attrs = append(attrs, semconv.ExceptionMessageKey.String(out.WriteErr.Error()))
		}
		span.AddEvent(mcpconv.EventResponseDropped, trace.WithAttributes(attrs...), end)
	}
	span.End(end)
}

// setErrorStatus marks span failed with err's JSON-RPC code (also as the
// response's status code when answered), and the message the client sees as
// the description. An internal error (a bug, a panic) also gets an exception
// event, at at, with what the client does not see. A caller's fault only gets its
// status code: the server did not fail.
func setErrorStatus(span trace.Span, err error, answered bool, at trace.SpanEventOption) {
	code := server.CodeOf(err)
	s := strconv.FormatInt(int64(code), 10)
	if answered { // a notification's failure has no response, so no status code
		span.SetAttributes(mcpconv.RPCResponseStatusCodeKey.String(s))
	}
	if callerFault(code) {
		return
	}
	e, isErr := errors.AsType[*server.Error](err)
	switch {
	case isErr && e != nil:
		span.SetStatus(codes.Error, e.Message)
		if code == protocol.CodeInternal && e.Unwrap() != nil {
			span.RecordError(e.Unwrap(), at)
		}
	case code == protocol.CodeRequestTimeout:
		span.SetStatus(codes.Error, "request timed out")
	default:
		span.SetStatus(codes.Error, "internal error")
		span.RecordError(err, at)
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
