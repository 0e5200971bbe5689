package gateway

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/vigil-mcp/vigil/gateway/internal/upstream"
	"github.com/vigil-mcp/vigil/internal/jsonscan"
	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/paramheader"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// The call path: a call of an upstream's tool, prompt or resource passes
// four stages, each in one place. Admit: the server, before any handler,
// checks the endpoint's selection (endpoints.go), the caller's tool view
// (views.go), scopes and policy. Map through the catalog (curation.go):
// the handler of a served name is its upstream tool's (the renaming, and
// pinning's held definitions, pinning.go, are decided at listing,
// catalog.go), its fixed and defaulted arguments set; search's call_tool
// (search.go) calls the same handler. Hop (this file): the handler
// forwards under the caller's context, with its notes relayed back, its
// Mcp-Param-* headers, span, metrics and trace context; the answer or
// error comes back here. Relay (relay.go): the upstream session that
// carries it, and the send.

// callTool returns the handler of the upstream's tool name: it forwards
// the call with the caller's context (again on a new session after the
// upstream forgot the session, when retry), with the Mcp-Param-* headers
// of the arguments its input schema mirrors, relays its log messages,
// and its progress when the caller asked for progress.
func (m *mount) callTool(name string, retry bool, mirrors []paramheader.Mirror) server.ToolHandler {
	return func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		notes := m.callNotes(ctx, req)
		m.bounded(notes)
		if len(mirrors) > 0 && m.up.URL != "" {
			// A 2026-07-28 upstream checks the headers that mirror
			// arguments (SEP-2243); a 2025 one ignores them.
			notes.Header = http.Header{}
			paramheader.Set(notes.Header, mirrors, req.Arguments)
		}
		raw, err := m.forwardRetry(ctx, "tools/call", toolCall{name, req.Arguments}, notes, retry)
		if err != nil {
			return nil, err
		}
		if id := upstreamTask(raw); id != "" { // a 2026-07-28 upstream made it a task (era2026.go)
			meta := callerMeta(ctx)
			return server.RunAsTask(ctx, func(ctx context.Context) (*server.CallToolResult, error) { return m.followTask(ctx, id, meta) })
		}
		return relayedResult(raw)
	}
}

// getPrompt returns the handler of the upstream's prompt name.
func (m *mount) getPrompt(name string) server.PromptHandler {
	return func(ctx context.Context, req *server.GetPromptRequest) (*server.GetPromptResult, error) {
		raw, err := m.forward(ctx, "prompts/get", map[string]any{"name": name, "arguments": req.Arguments}, nil)
		if err != nil {
			return nil, err
		}
		var w struct {
			Description string `json:"description"`
			Messages    []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
			Meta server.Meta `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, badResult(err)
		}
		res := &server.GetPromptResult{Description: w.Description, Meta: w.Meta, Messages: make([]*server.PromptMessage, 0, len(w.Messages))}
		for _, msg := range w.Messages {
			c, err := server.UnmarshalContent(msg.Content)
			if err != nil {
				return nil, badResult(err)
			}
			res.Messages = append(res.Messages, &server.PromptMessage{Role: msg.Role, Content: c})
		}
		return res, nil
	}
}

// readResource forwards resources/read of the URI asked for.
func (m *mount) readResource(ctx context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
	raw, err := m.forward(ctx, "resources/read", map[string]string{"uri": req.URI}, nil)
	if err != nil {
		return nil, err
	}
	var res server.ReadResourceResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, badResult(err)
	}
	return &res, nil
}

// callNotes relays a call's log messages to its caller, its progress
// when the caller asked for progress, and the upstream's polling: when
// an HTTP upstream ends the call's SSE stream to be polled (SEP-1699),
// the caller's stream is ended likewise, so that the caller polls the
// gateway, when the gateway's endpoint keeps events to resume from
// (otherwise the caller's stream stays open).
func (m *mount) callNotes(ctx context.Context, req *server.CallToolRequest) *upstream.Notes {
	notes := &upstream.Notes{Log: func(p json.RawMessage) { relayLog(ctx, p) }}
	if req.Request != nil {
		if token, ok := req.Request.Meta.Get("progressToken"); ok {
			notes.Progress = func(p json.RawMessage) { relayProgress(ctx, p) }
			notes.ProgressToken = token // the upstream sees the caller's own token when it can
		}
		if m.up.URL != "" {
			id := req.Request.ID
			notes.Polled = func() { _ = streamable.CloseSSEStream(ctx, id) }
		}
	}
	return notes
}

// bounded bounds the rate at which notes relays one call's progress and
// log notifications, together, to relayPerSecond; those over it are
// dropped and counted (mcp_gateway_upstream_dropped_total, progress and
// notification). Progress is lossy by nature: the caller still gets the
// call's result, after the progress relayed.
func (m *mount) bounded(notes *upstream.Notes) {
	bucket := rate.NewLimiter(relayPerSecond, relayBurst)
	t := m.g.tally[m.up.Name]
	if progress := notes.Progress; progress != nil {
		notes.Progress = func(p json.RawMessage) {
			if !bucket.Allow() {
				t.progress.Add(1)
				return
			}
			progress(p)
		}
	}
	if log := notes.Log; log != nil {
		notes.Log = func(p json.RawMessage) {
			if !bucket.Allow() {
				t.logs.Add(1)
				return
			}
			log(p)
		}
	}
}

// The rate at which one call's progress and log notifications are relayed
// to its caller, a token bucket: an upstream that sends them without end
// costs its caller no more; those over it are dropped and counted.
const (
	relayPerSecond = 100
	relayBurst     = 100
)

// relayLog sends the upstream's log message of a call to the caller, as
// the upstream sent it, related to the caller's request, when the caller
// asked for its level.
func relayLog(ctx context.Context, params json.RawMessage) {
	if req := server.RequestFromContext(ctx); req != nil && req.Session != nil && clientWantsLog(ctx, params) {
		_ = req.Session.Notify(ctx, "notifications/message", params)
	}
}

// relayProgress reports the upstream's progress to the caller.
func relayProgress(ctx context.Context, params json.RawMessage) {
	var p struct {
		Progress float64 `json:"progress"`
		Total    float64 `json:"total"`
		Message  string  `json:"message"`
	}
	if json.Unmarshal(params, &p) == nil {
		_ = server.ReportProgress(ctx, p.Progress, p.Total, p.Message)
	}
}

// toolCall is the params of a tools/call forwarded upstream.
type toolCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// forward calls method upstream with params under the caller's ctx,
// again on a new session after it expired when method is retrySafe.
func (m *mount) forward(ctx context.Context, method string, params any, notes *upstream.Notes) (json.RawMessage, error) {
	return m.forwardRetry(ctx, method, params, notes, retrySafe(method))
}

// forwardRetry is forward, which retry allows to retry or not.
func (m *mount) forwardRetry(ctx context.Context, method string, params any, notes *upstream.Notes, retry bool) (res json.RawMessage, err error) {
	ctx, end := m.startHop(ctx, method, params)
	defer func() {
		if _, asks := errors.AsType[*server.InputRequired](err); asks {
			end(nil, false) // the upstream answered: with questions
			return
		}
		end(err, err == nil && method == "tools/call" && toolFailed(res))
	}()
	if m.up.Authorize != nil && server.RequestFromContext(ctx) != nil {
		if err := m.up.Authorize(ctx); err != nil {
			return nil, err
		}
	}
	raw, err := encodeParams(params)
	if err != nil {
		return nil, err
	}
	if trace := traceMembers(ctx); trace != nil {
		if notes == nil {
			notes = &upstream.Notes{}
		}
		notes.Meta = trace
	}
	if m.rest != nil && method == "tools/call" {
		if notes == nil {
			notes = &upstream.Notes{}
		}
		defer m.rest.carry(ctx, notes)() // restcall.go: the REST call is the caller's
	}
	if req := server.RequestFromContext(ctx); req != nil {
		if owner := m.g.srv.CallerKey(req); owner != "" {
			if notes == nil {
				notes = &upstream.Notes{}
			}
			notes.Owner = owner // a shared upstream session serves one caller at a time
		}
	}
	return m.relay(ctx, method, raw, notes, retry) // relay.go
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

// encodeParams returns the JSON of params: a tool call's written by hand
// (every forwarded call's; its arguments as the caller sent them, valid
// JSON already), any other by encoding/json.
func encodeParams(params any) (json.RawMessage, error) {
	call, ok := params.(toolCall)
	if !ok {
		return json.Marshal(params)
	}
	b := make([]byte, 0, len(`{"name":,"arguments":}`)+len(call.Name)+2+len(call.Arguments))
	b = jsonscan.AppendString(append(b, `{"name":`...), call.Name)
	if len(call.Arguments) > 0 {
		b = append(append(b, `,"arguments":`...), call.Arguments...)
	}
	return append(b, '}'), nil
}

// traceMembers returns the W3C trace context of ctx's span as members of
// params._meta (traceparent, tracestate), as MCP carries it, so that the
// upstream's span is a child of the caller's; nil when ctx has no span.
func traceMembers(ctx context.Context) []byte {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	// Written as propagation.TraceContext writes its headers, without the
	// map it writes them into.
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, 96)
	b = append(b, `"traceparent":"00-`...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{byte(sc.TraceFlags() & trace.FlagsSampled)})
	b = append(b, '"')
	if ts := sc.TraceState().String(); ts != "" {
		b = strconv.AppendQuote(append(b, `,"tracestate":`...), ts)
	}
	return b
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

// callError turns the failure of a forwarded call into the handler's
// error: the caller's own cause when its context ended, the upstream's
// JSON-RPC error as it was, and a protocol error naming the upstream when
// it is gone.
func (m *mount) callError(ctx context.Context, err error) error {
	var rpc *transport.Error
	var tooLarge *upstream.TooLargeError
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.As(err, &tooLarge):
		return server.NewError(protocol.CodeInternal, m.tooLarge(tooLarge))
	case errors.As(err, &rpc):
		return &server.Error{Code: protocol.Code(rpc.Code), Message: rpc.Message, Data: rpc.Data}
	case errors.Is(err, upstream.ErrGone), errors.Is(err, upstream.ErrClosed):
		m.checkCatalog() // is the whole upstream down, or only this session?
		return upstreamGone(m.up.Name, err)
	default:
		return err
	}
}

// relayedResult is an upstream's tools/call result relayed as the
// upstream sent it, byte for byte ("isError": false and members the
// server does not know included): nothing in it must change.
func relayedResult(raw json.RawMessage) (*server.CallToolResult, error) {
	res, err := server.RawToolResult(raw)
	if err != nil {
		return nil, badResult(err)
	}
	return res, nil
}

// decodeToolResult decodes an upstream's tools/call result, for a result
// the gateway changes (a task's: see tasks.go).
func decodeToolResult(raw json.RawMessage) (*server.CallToolResult, error) {
	var w struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
		Meta              server.Meta       `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, badResult(err)
	}
	res := &server.CallToolResult{Content: make([]server.Content, 0, len(w.Content)), IsError: w.IsError, Meta: w.Meta}
	for _, c := range w.Content {
		block, err := server.UnmarshalContent(c)
		if err != nil {
			return nil, badResult(err)
		}
		res.Content = append(res.Content, block)
	}
	if len(w.StructuredContent) > 0 && string(w.StructuredContent) != "null" {
		res.StructuredContent = w.StructuredContent
	}
	return res, nil
}

// badResult is the error of an upstream's result that does not decode.
func badResult(err error) error {
	return server.NewError(protocol.CodeInternal, fmt.Errorf("the upstream's result: %w", err))
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
