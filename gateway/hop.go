package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// toolCall is the params of a tools/call forwarded upstream.
type toolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// startHop starts the hop of a call of method forwarded upstream with
// params: the downstream request's span (ctx's) names the upstream, and
// stands for the hop too, its context what goes upstream in _meta (a
// client span of the hop's own cost as much as a forwarded call's
// serving span and was the largest part of what tracing cost the hop);
// the hop's metrics start. end records how it ended: err is what
// forward returns, toolErr that it returned a tool result with isError.
func (m *mount) startHop(ctx context.Context, method string, params any) (context.Context, func(err error, toolErr bool)) {
	started := time.Now()
	endpoint := "" // the catalog's endpoint the call came through (endpoints.go); "": the default one
	if req := server.RequestFromContext(ctx); req != nil && m.g.catalog.Load() != nil {
		if e := endpointOf(req.ArrivalContext()); e != nil {
			endpoint = e.name
		}
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(mcpconv.UpstreamKey.String(m.up.Name)) // the downstream request's span names its upstream
		if endpoint != "" {
			span.SetAttributes(mcpconv.EndpointKey.String(endpoint)) // and its endpoint
		}
	}
	tool := ""
	if c, ok := params.(toolCall); ok {
		tool = c.Name
	}
	return ctx, func(err error, toolErr bool) {
		outcome, errType := hopOutcome(ctx, err)
		if toolErr && outcome == mcpconv.OutcomeOK {
			outcome, errType = metrics.ToolError, mcpconv.ErrorTypeTool
		}
		d := time.Since(started)
		m.g.obs.Called(m.up.Name, method, tool, outcome, errType, endpoint, d)
		m.calls.add(outcome, d)
	}
}

// toolFailed reports whether raw, a tools/call's result, has isError
// set; the whole result is decoded only when it names isError.
func toolFailed(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`"isError"`)) {
		return false
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(raw, &r) == nil && r.IsError
}

// hopOutcome classifies how a forwarded call ended, as
// mcp_gateway_upstream_calls_total counts it, with its error type: the
// caller's cancel first, then an upstream that went away, then a call
// refused unsent (not_ready), then an error.
func hopOutcome(caller context.Context, err error) (outcome, errType string) {
	switch {
	case err == nil:
		return mcpconv.OutcomeOK, ""
	case caller.Err() != nil:
		return mcpconv.OutcomeCancelled, mcpconv.ErrorTypeCancelled
	case errors.Is(err, server.ErrUpstreamClosed):
		return metrics.UpstreamClosed, mcpconv.ErrorTypeUpstreamClosed
	}
	if _, refused := errors.AsType[*notReadyError](err); refused {
		return metrics.NotReady, strconv.FormatInt(int64(protocol.CodeServerBusy), 10)
	}
	if e, ok := errors.AsType[*server.Error](err); ok {
		return mcpconv.OutcomeError, strconv.FormatInt(int64(e.Code), 10)
	}
	return mcpconv.OutcomeError, mcpconv.ErrorTypeOther
}

// relaySpan starts the span of the relay of req, a request of the upstream
// (sampling, elicitation, roots) to the downstream client, when req
// carries trace context in _meta: a server span, child of the upstream's
// span that sent it, linked to the hop's span it belongs to (ctx's), so
// that the client's answer is traced under the upstream's request. ctx as
// it is, and an end that does nothing, when req carries none or nothing
// traces ctx.
func relaySpan(ctx context.Context, req *transport.Request) (context.Context, func(err error)) {
	ambient := trace.SpanFromContext(ctx)
	if !ambient.IsRecording() || len(req.Params) == 0 {
		return ctx, func(error) {}
	}
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &p) != nil || p.Meta["traceparent"] == nil {
		return ctx, func(error) {}
	}
	carrier := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := p.Meta[k].(string); ok {
			carrier[k] = v
		}
	}
	remote := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	if !remote.IsValid() {
		return ctx, func(error) {}
	}
	ctx, span := ambient.TracerProvider().Tracer(mcpconv.ScopeName).Start(
		trace.ContextWithRemoteSpanContext(ctx, remote), req.Method,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithLinks(trace.Link{SpanContext: ambient.SpanContext()}),
		trace.WithAttributes(mcpconv.MCPMethodNameKey.String(req.Method)))
	return ctx, func(err error) {
		if err != nil {
			span.SetAttributes(semconv.ErrorTypeKey.String(mcpconv.ErrorTypeOther))
			if e, ok := errors.AsType[*transport.Error](err); ok {
				code := strconv.FormatInt(e.Code, 10)
				span.SetAttributes(semconv.ErrorTypeKey.String(code), mcpconv.RPCResponseStatusCodeKey.String(code))
			}
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
