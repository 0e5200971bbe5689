package middleware

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/transport/protocol"

	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
)

// recordMetrics returns middleware that records every request in m: on its
// way in, as started and in flight; once the core sealed its outcome
// (serverhook.Ends.AfterDone), the outcome (with its error type and any
// JSON-RPC code as rpc_response_status_code), the duration since receipt
// (labeled with the protocol version and network), the end of the in-flight count and any
// cancellation. Outcomes, in precedence: cancelled, dropped, error (a
// JSON-RPC error; error_type its code, but none for a caller's fault:
// -32700, -32600, -32601, -32602, -32002, and result_too_large for a
// result over its bound, server.Outcome.ResultTooLarge), ok (a tool result with isError
// has error_type "tool_error", or "invalid_arguments" when it refused
// arguments that do not match the tool's input schema). A tools/call is labeled with its tool when
// registered ([server.Server.Tool]) or on m's allow-list, else "other".
// Notifications pass uncounted; a nil m makes it the identity. Place it
// right inside the tracing, whose trace id becomes the exemplar, and outside
// the recovery of panics and the tool rates, as [NewInstrumentation] does.
func recordMetrics(m *metrics.Metrics) server.Middleware {
	if m == nil {
		return func(next server.Handler) server.Handler { return next }
	}
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.IsNotification() {
				return next(ctx, req)
			}
			start, traceID := recordStart(trace.SpanContextFromContext(ctx), m, req)
			transport := transportOf(ctx)
			// One allocation: the closure holds what it uses by value.
			serverhook.Of[server.Outcome](ctx).AfterDone(func(out server.Outcome) { recordEnd(m, req, transport, start, traceID, out) })
			return next(ctx, req)
		}
	}
}

// recordStart records req as started in m, and returns when it started and
// the trace id of sc, its span's context, that may become the exemplar of
// its end (zero when the span is not sampled).
func recordStart(sc trace.SpanContext, m *metrics.Metrics, req *server.Request) (time.Time, trace.TraceID) {
	var traceID trace.TraceID // encoded only if it becomes an exemplar
	if sc.IsSampled() {
		traceID = sc.TraceID()
	}
	m.RequestStarted(req.Method)
	return requestStart(req), traceID
}

// recordEnd records how req, which came on transport, ended, in m.
func recordEnd(m *metrics.Metrics, req *server.Request, transport string, start time.Time, traceID trace.TraceID, out server.Outcome) {
	outcome, errType, status := outcomeLabels(out)
	if out.Err != nil {
		if q, ok := errors.AsType[*server.QuotaError](out.Err); ok {
			m.QuotaRefused(q.Quota.String())
		}
	}
	if cause := cancelCause(out); cause != protocol.ReasonNone {
		m.RequestCancelled(req.Method, cause.String())
	}
	tool, registered, upstream, endpoint := "", false, "", ""
	if m.UpstreamLabeled() {
		endpoint = metrics.EndpointOf(req.ArrivalContext())
	}
	if req.Method == "tools/call" {
		tool = req.Name
		if tool != "" && req.Session != nil {
			var t server.Tool
			t, registered = req.Session.Server().Tool(tool)
			if m.UpstreamLabeled() {
				upstream = t.Upstream
			}
		}
	}
	end := out.Ended
	m.RequestFinished(metrics.RequestEnd{
		Method:          req.Method,
		Tool:            tool,
		ToolRegistered:  registered,
		Outcome:         outcome,
		ErrorType:       errType,
		StatusCode:      status,
		ProtocolVersion: protocolOf(req),
		Transport:       transport,
		Upstream:        upstream,
		Endpoint:        endpoint,
		Duration:        end.Sub(start),
		Ended:           end,
		TraceID:         traceID,
	})
	if out.ResultTooLarge {
		m.ResultTooLarge(req.Method, tool, registered)
	}
}

// callerFault reports whether a JSON-RPC error code is the caller's fault
// by the OpenTelemetry MCP conventions: -32700 (parse error), -32600
// (invalid request), -32601 (method not found), -32602 (invalid params)
// and -32002 (resource not found). A request answered with one did not
// fail on the server: its span keeps status Unset and has no error.type,
// and its outcome count no error_type; the code stays visible as
// rpc.response.status_code.
func callerFault(code protocol.Code) bool {
	switch code {
	case protocol.CodeParseError, protocol.CodeInvalidRequest, protocol.CodeMethodNotFound,
		protocol.CodeInvalidParams, protocol.CodeResourceNotFound:
		return true
	}
	return false
}

// protocolOf returns the protocol version of req: its own, or for
// initialize the one it negotiated.
func protocolOf(req *server.Request) string {
	if req.Protocol == "" && req.Method == "initialize" && req.Session != nil {
		return req.Session.ProtocolVersion()
	}
	return req.Protocol
}

// outcomeLabels returns a request's outcome, its error type and the
// JSON-RPC status code of an error answer, as the metrics, the span
// (error.type) and the live page all say them: one vocabulary.
func outcomeLabels(out server.Outcome) (outcome, errType, status string) {
	outcome, errType = classifyOutcome(out)
	if answeredCancel(out) { // the client received the transport's error: its code
		status = strconv.FormatInt(int64(server.CodeOf(out.Err)), 10)
	}
	if outcome == mcpconv.OutcomeError {
		status = errType
		if errType == mcpconv.ErrorTypeUpstreamClosed {
			status = strconv.FormatInt(int64(server.CodeOf(out.Err)), 10)
		}
		if callerFault(server.CodeOf(out.Err)) {
			errType = ""
		}
		if out.ResultTooLarge {
			errType = mcpconv.ErrorTypeResultTooLarge
		}
	}
	return outcome, errType, status
}

// answeredCancel reports whether out is a cancelled request that was
// answered all the same: its session ended under it and the transport
// answered it (server.Outcome.Err, -32000 "session terminated"), so no
// response was dropped.
func answeredCancel(out server.Outcome) bool {
	return out.Cause != nil && out.Dropped == protocol.DropNone && out.Err != nil
}

// classifyOutcome returns a request's outcome and error type, in the
// precedence documented on recordMetrics.
func classifyOutcome(out server.Outcome) (outcome, errType string) {
	switch {
	case out.Cause != nil:
		return mcpconv.OutcomeCancelled, mcpconv.ErrorTypeCancelled
	case out.Dropped != protocol.DropNone:
		return mcpconv.OutcomeDropped, mcpconv.ErrorTypeDropped
	case out.Err != nil:
		if chainCause(out.Err) == protocol.ReasonUpstreamClosed {
			return mcpconv.OutcomeError, mcpconv.ErrorTypeUpstreamClosed
		}
		return mcpconv.OutcomeError, strconv.FormatInt(int64(server.CodeOf(out.Err)), 10)
	case out.ToolError():
		return mcpconv.OutcomeOK, toolErrorType(out)
	}
	return mcpconv.OutcomeOK, ""
}

// toolErrorType is the error type of a tool result with isError set:
// "invalid_arguments" when it refused arguments that do not match the
// tool's input schema, else "tool_error".
func toolErrorType(out server.Outcome) string {
	if out.InvalidArguments() {
		return mcpconv.ErrorTypeInvalidArguments
	}
	return mcpconv.ErrorTypeTool
}

// cancelCause returns why a request's handler was cancelled: the request
// context's cause, or the cause of the error the handler answered with
// ([chainCause]).
func cancelCause(out server.Outcome) protocol.CancelReason {
	if out.Cause != nil {
		return server.ReasonOfCause(out.Cause)
	}
	return chainCause(out.Err)
}

// chainCause returns the cause a handler's error carries: timeout for a
// timeout inside the chain (server.ErrHandlerTimeout or a deadline in
// it), upstream_closed when what the handler relied on went away
// (server.ErrUpstreamClosed), else none.
func chainCause(err error) protocol.CancelReason {
	if err == nil {
		return protocol.ReasonNone
	}
	switch r := server.ReasonOfCause(err); r {
	case protocol.ReasonTimeout, protocol.ReasonUpstreamClosed:
		return r
	}
	return protocol.ReasonNone
}
