package middleware

import (
	"context"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/slogtext"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Attribute keys of the records [Logging] writes, besides [LogRequestID]
// and [LogSessionID].
const (
	LogMethod    = "method"     // the request method
	LogTool      = "tool"       // the tool of tools/call
	LogPrompt    = "prompt"     // the prompt of prompts/get
	LogDuration  = "duration"   // from receipt until the outcome was sealed
	LogOutcome   = "outcome"    // ok, error, cancelled or dropped (telemetry.Outcome*)
	LogCode      = "code"       // the JSON-RPC error code of outcome error
	LogError     = "error"      // the error's text (never sent as such to the client)
	LogCause     = "cause"      // why it was cancelled: client_cancel, transport_close, shutdown, timeout, other
	LogReason    = "reason"     // why no response was written: cancelled, writer_closed, peer_gone, shutdown
	LogToolError = "tool_error" // true for a tool result with isError set
	LogSubject   = "subject"    // the authorized principal's subject; absent without authorization
)

// DefaultLogLevel is the level [Logging] logs a request at by default:
// Debug for a request the client cancelled (notifications/cancelled: the
// client knows), Info for other cancellations and dropped responses (the
// client went away or the server stops) and for successes, including tool
// results with isError, and Warn for a JSON-RPC error answer (a timeout, a
// rejection, a recovered panic, invalid params, ...).
func DefaultLogLevel(_ *server.Request, out server.Outcome) slog.Level {
	switch {
	case out.Cause != nil:
		if server.ReasonOfCause(out.Cause) == protocol.ReasonClientCancel {
			return slog.LevelDebug
		}
		return slog.LevelInfo
	case out.Dropped != protocol.DropNone:
		return slog.LevelInfo
	case out.Err != nil:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// Logging returns middleware that writes one record, "request", per
// request (notifications pass unlogged) when its outcome is sealed (see
// [server.Request.OnDone]): after the response was written, or the
// decision not to write one. The record carries
//
//   - method, tool (tools/call) or prompt (prompts/get), request_id,
//     session_id (left out for a stateless request), subject (the
//     [auth.Principal]'s, when the request was authorized) and duration
//     (since the core read the request);
//   - outcome: ok, error, cancelled or dropped, in the precedence of
//     [RecordMetrics], so that logs and metrics agree;
//   - for error: code (the JSON-RPC code answered) and error (the text of
//     the error the chain returned, which the client may not have seen;
//     cause "timeout" too for -32001);
//   - for cancelled: cause (client_cancel, transport_close, shutdown,
//     timeout, other) and reason (why no response was written);
//   - for dropped: reason, and error (the write error) if there was one;
//   - for ok: tool_error=true when a tool result has isError set.
//
// The level comes from [DefaultLogLevel] or [WithLogLevel]; nothing is
// built for a level the logger does not enable. The record is logged with
// the handler's context as Logging received it, so that a [LogHandler]
// adds the trace and span ids (it does not add request_id and session_id
// twice). A nil logger makes Logging the identity. The returned middleware
// is safe for concurrent use.
//
// Place it inside [Tracing], for the trace ids, and outside the middleware
// that may answer without calling the handler ([ConcurrencyLimit]) or cut
// it short ([Timeout], [Recover]), so that every request is logged; the
// order of [NewInstrumentation] puts it right after [RecordMetrics].
func Logging(logger *slog.Logger, opts ...Option) server.Middleware {
	if logger == nil {
		return func(next server.Handler) server.Handler { return next }
	}
	level := newConfig(opts).logLevel
	if level == nil {
		level = DefaultLogLevel
	}
	// With the handler of LogHandler, the record is built with its ids
	// already added: the same record, without copying it in Handle; when
	// LogHandler wraps a TextLineHandler, it is handed the attributes in
	// text, with no record at all.
	lh, direct := logger.Handler().(logHandler)
	var text TextLineHandler
	var lines *sync.Pool // of *[]byte, the attributes of a line
	if direct {
		if text, _ = lh.next.(TextLineHandler); text != nil {
			lines = &sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}
		}
	}
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.IsNotification() {
				return next(ctx, req)
			}
			start := req.Received
			if start.IsZero() {
				start = time.Now()
			}
			req.OnDone(func(out server.Outcome) {
				level := level(req, out)
				if !logger.Enabled(ctx, level) {
					return
				}
				switch {
				case text != nil:
					logRequestText(ctx, text, lines, level, req, out, start)
					return
				case direct:
					logRequestTo(ctx, lh, level, req, out, start)
					return
				}
				logRequest(ctx, logger, level, req, out, out.EndTime().Sub(start))
			})
			return next(ctx, req)
		}
	}
}

// logRequest logs the record of [Logging] through logger.
func logRequest(ctx context.Context, logger *slog.Logger, level slog.Level, req *server.Request, out server.Outcome, d time.Duration) {
	var buf [11]slog.Attr
	logger.LogAttrs(ctx, level, "request", requestAttrs(buf[:0], req, out, d)...)
}

// logRequestTo writes the record that logRequest would pass to h, as
// [slog.Logger.LogAttrs] builds it (time, level, message) and with the ids
// h would add, but in one record: h.Handle would copy it to add them. The
// record has no pc: its source would be this function, for every request,
// which tells a reader nothing (and finding it costs more than formatting
// the line's duration). The caller has checked that h is enabled at level.
func logRequestTo(ctx context.Context, h logHandler, level slog.Level, req *server.Request, out server.Outcome, start time.Time) {
	now := out.EndTime()
	r := slog.NewRecord(now, level, "request", 0)
	var buf [15]slog.Attr
	attrs := requestAttrs(buf[:0], req, out, now.Sub(start))
	// The record carries request_id, and session_id for a request in a
	// session: what logHandler.Handle would find with recordHas.
	attrs = appendIDs(ctx, attrs, req.InSession(), true)
	r.AddAttrs(attrs...)
	_ = h.next.Handle(ctx, r) // as Logger.LogAttrs, which drops the error
}

// TextLineHandler is a [slog.Handler] that writes records as
// [slog.TextHandler] does (with no ReplaceAttr or AddSource) and can also
// take a record whose attributes are already in that form. A [Logging]
// whose logger's handler is a [LogHandler] wrapping a TextLineHandler
// hands it each request's record so, spared the [slog.Record] and its
// attributes, which cost more than formatting the line itself.
type TextLineHandler interface {
	slog.Handler
	// HandleTextLine writes the record of time t (none if zero), level
	// and message msg whose attributes, as the TextHandler writes them,
	// are attrs: each " key=value", with its leading space. The caller
	// has checked that the handler is enabled at level; attrs is the
	// caller's again when HandleTextLine returns.
	HandleTextLine(ctx context.Context, t time.Time, level slog.Level, msg string, attrs []byte) error
}

// logRequestText writes the record that logRequestTo would pass to h's
// Handle through HandleTextLine, with the attributes in text, the trace ids
// written straight from the span context. lines holds the buffers.
func logRequestText(ctx context.Context, h TextLineHandler, lines *sync.Pool, level slog.Level, req *server.Request, out server.Outcome, start time.Time) {
	now := out.EndTime()
	var buf [15]slog.Attr
	bp := lines.Get().(*[]byte)
	b := (*bp)[:0]
	for _, a := range requestAttrs(buf[:0], req, out, now.Sub(start)) {
		b = slogtext.AppendAttr(b, a) // every value is of a plain kind
	}
	// As appendIDs, for a record that carries request_id and, in a
	// session, session_id: the trace ids only.
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tid, sid := sc.TraceID(), sc.SpanID()
		b = append(b, " "+LogTraceID+"="...)
		b = hex.AppendEncode(b, tid[:])
		b = append(b, " "+LogSpanID+"="...)
		b = hex.AppendEncode(b, sid[:])
	}
	_ = h.HandleTextLine(ctx, now, level, "request", b) // as Logger.LogAttrs, which drops the error
	if cap(b) <= 4<<10 {
		*bp = b
		lines.Put(bp)
	}
}

// requestAttrs appends the attributes of the record of [Logging] to attrs.
func requestAttrs(attrs []slog.Attr, req *server.Request, out server.Outcome, d time.Duration) []slog.Attr {
	attrs = append(attrs, slog.String(LogMethod, req.Method))
	switch req.Method {
	case "tools/call":
		attrs = append(attrs, slog.String(LogTool, req.Name))
	case "prompts/get":
		attrs = append(attrs, slog.String(LogPrompt, req.Name))
	}
	attrs = append(attrs, slog.String(LogRequestID, req.ID.String()))
	if req.InSession() {
		attrs = append(attrs, slog.String(LogSessionID, req.Session.ID()))
	}
	if p, ok := auth.PrincipalFrom(req.ArrivalContext()); ok {
		attrs = append(attrs, slog.String(LogSubject, p.Subject))
	}
	attrs = append(attrs, slog.Duration(LogDuration, d))
	outcome, errType := classifyOutcome(out)
	attrs = append(attrs, slog.String(LogOutcome, outcome))
	switch outcome {
	case telemetry.OutcomeError:
		attrs = append(attrs, slog.Int64(LogCode, int64(server.CodeOf(out.Err))), slog.String(LogError, out.Err.Error()))
		if server.ReasonOfCause(out.Err) == protocol.ReasonTimeout {
			attrs = append(attrs, slog.String(LogCause, protocol.ReasonTimeout.String()))
		}
	case telemetry.OutcomeCancelled:
		attrs = append(attrs, slog.String(LogCause, server.ReasonOfCause(out.Cause).String()), slog.String(LogReason, out.Dropped.String()))
	case telemetry.OutcomeDropped:
		attrs = append(attrs, slog.String(LogReason, out.Dropped.String()))
		if out.WriteErr != nil {
			attrs = append(attrs, slog.String(LogError, out.WriteErr.Error()))
		}
	case telemetry.OutcomeOK:
		if errType == telemetry.ErrorTypeTool {
			attrs = append(attrs, slog.Bool(LogToolError, true))
		}
	}
	return attrs
}
