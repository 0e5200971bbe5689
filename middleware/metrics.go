package middleware

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
)

// RecordMetrics returns middleware that records every request in m: it counts the
// request as started and in flight on its way in, and once the core sealed
// the request's outcome (see server.Request.AfterDone: the response written,
// or the decision not to write one; with server.WithOutcomeBatches, in the
// request's batch) it counts the outcome, observes the duration since
// receipt, ends the in-flight count and counts a cancellation.
// Notifications pass through uncounted (the transport counters of [CountConns]
// and [CountConn] count them as messages). With a nil m it returns the identity.
//
// A tools/call is labeled with its tool name when the tool is registered
// with the session's server when the request ends ([server.Server.HasTool],
// the live registry, so tools added later count as themselves) or on m's
// allow-list, and "other" otherwise.
//
// Each request ends in exactly one outcome, decided in this order:
//
//  1. cancelled: the request's context was cancelled before its handler
//     returned (Outcome.Cause is set; the core then writes no response);
//  2. dropped: the handler finished but its response could not be written
//     (Outcome.Dropped is set without a Cause);
//  3. error: answered with a JSON-RPC error (error_type is its code);
//  4. ok: answered with a result; a tools/call result with isError set is
//     ok, with error_type="tool_error" on the duration histogram.
//
// A cancellation is also counted, with cause timeout, when a timeout inside
// the chain ([server.ErrHandlerTimeout], say from a Timeout middleware inside
// this one, or a deadline) made the handler answer with an error: that
// request's outcome is error (-32001 for ErrHandlerTimeout).
// Dropped responses are counted by [MetricsObserver], which sees drops this
// middleware cannot (requests read after the writer broke).
//
// Place it right inside Tracing and outside Recover and Timeout: the trace id
// of a sampled span in the request's context becomes the exemplar of the
// duration and the finished count.
func RecordMetrics(m *telemetry.Metrics) server.Middleware {
	if m == nil {
		return func(next server.Handler) server.Handler { return next }
	}
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.IsNotification() {
				return next(ctx, req)
			}
			start, traceID := recordStart(trace.SpanContextFromContext(ctx), m, req)
			// One allocation: the closure holds what it uses by value.
			req.AfterDone(func(out server.Outcome) { recordEnd(m, req, start, traceID, out) })
			return next(ctx, req)
		}
	}
}

// recordStart records req as started in m, and returns when it started and
// the trace id of sc, its span's context, that may become the exemplar of
// its end (zero when the span is not sampled).
func recordStart(sc trace.SpanContext, m *telemetry.Metrics, req *server.Request) (time.Time, trace.TraceID) {
	var traceID trace.TraceID // encoded only if it becomes an exemplar
	if sc.IsSampled() {
		traceID = sc.TraceID()
	}
	m.RequestStarted(req.Method)
	return requestStart(req), traceID
}

// recordEnd records how req ended, in m.
func recordEnd(m *telemetry.Metrics, req *server.Request, start time.Time, traceID trace.TraceID, out server.Outcome) {
	outcome, errType := classifyOutcome(out)
	if out.Err != nil {
		if q, ok := errors.AsType[*server.QuotaError](out.Err); ok {
			m.QuotaRefused(q.Quota.String())
		}
	}
	if cause := cancelCause(out); cause != protocol.ReasonNone {
		m.RequestCancelled(req.Method, cause.String())
	}
	tool, registered := "", false
	if req.Method == "tools/call" {
		tool = req.Name
		registered = tool != "" && req.Session != nil && req.Session.Server().HasTool(tool)
	}
	end := out.EndTime()
	m.RequestFinished(telemetry.RequestEnd{
		Method:         req.Method,
		Tool:           tool,
		ToolRegistered: registered,
		Outcome:        outcome,
		ErrorType:      errType,
		Duration:       end.Sub(start),
		Ended:          end,
		Trace:          traceID,
	})
	if out.ResultTooLarge {
		m.ResultTooLarge(tool, registered)
	}
}

// classifyOutcome returns a request's outcome and error type, in the
// precedence documented on [RecordMetrics].
func classifyOutcome(out server.Outcome) (outcome, errType string) {
	switch {
	case out.Cause != nil:
		return telemetry.OutcomeCancelled, telemetry.ErrorTypeCancelled
	case out.Dropped != protocol.DropNone:
		return telemetry.OutcomeDropped, telemetry.ErrorTypeDropped
	case out.Err != nil:
		return telemetry.OutcomeError, strconv.FormatInt(int64(server.CodeOf(out.Err)), 10)
	case out.ToolError():
		return telemetry.OutcomeOK, telemetry.ErrorTypeTool
	}
	return telemetry.OutcomeOK, ""
}

// cancelCause returns why a request's handler was cancelled: the request
// context's cause, or a timeout inside the chain that the handler answered
// with an error (server.ErrHandlerTimeout or a deadline in its chain).
func cancelCause(out server.Outcome) protocol.CancelReason {
	if out.Cause != nil {
		return server.ReasonOfCause(out.Cause)
	}
	if server.ReasonOfCause(out.Err) == protocol.ReasonTimeout {
		return protocol.ReasonTimeout
	}
	return protocol.ReasonNone
}
