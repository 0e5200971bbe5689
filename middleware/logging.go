package middleware

import (
	"context"
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/internal/slogtext"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Attribute keys of the records [WithRequestLog] writes, besides request_id
// and session_id.
const (
	logMethod    = "method"           // the request method
	logTool      = "tool"             // the tool of tools/call
	logPrompt    = "prompt"           // the prompt of prompts/get
	logDuration  = "duration_seconds" // from receipt until the outcome was sealed, in seconds (as the audit log)
	logOutcome   = "outcome"          // ok, error, cancelled or dropped (telemetry.Outcome*)
	logErrorType = "error_type"       // the metrics' error_type and the span's error.type, when set
	logCode      = "code"             // the JSON-RPC error code of outcome error, or of a cancelled request the transport answered
	logError     = "error"            // the error's text (never sent as such to the client)
	logCause     = "cause"            // why it was cancelled: client_cancel, transport_close, shutdown, timeout, upstream_closed, other
	logReason    = "reason"           // why no response was written: cancelled, writer_closed, peer_gone, shutdown
	logToolError = "tool_error"       // true for a tool result with isError set
	logSubject   = "subject"          // the authorized principal's subject; absent without authorization
	logActor     = "actor"            // who acts on behalf of subject (a delegated token's act chain, actorOf); absent otherwise
)

// DefaultLogLevel is the level [WithRequestLog] logs a request at by default:
// Info for a success (tool results with isError included), for a
// cancellation whatever its cause (the client's notifications/cancelled too)
// and for a dropped response (the client went away or the server stops), and
// Warn for a JSON-RPC error answer (a timeout, a rejection, a recovered
// panic, invalid params, ...). Every request thus has its line at the
// default level, Info.
func DefaultLogLevel(_ *server.Request, out server.Outcome) slog.Level {
	switch {
	case out.Cause != nil:
		return slog.LevelInfo
	case out.Dropped != protocol.DropNone:
		return slog.LevelInfo
	case out.Err != nil:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// logging is the request log of [WithRequestLog] with cfg; a nil logger makes
// it the identity. NewInstrumentation places it inside tracing and outside
// the recovery of panics and the tool rates, so that every request is
// logged. It is safe for concurrent use.
func logging(logger *slog.Logger, cfg loggingConfig) server.Middleware {
	if logger == nil {
		return func(next server.Handler) server.Handler { return next }
	}
	l := newRequestLogger(logger, cfg)
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.IsNotification() {
				return next(ctx, req)
			}
			start := requestStart(req)
			serverhook.Of[server.Outcome](ctx).AfterDone(func(out server.Outcome) { l.log(ctx, nil, req, out, start) })
			return next(ctx, req)
		}
	}
}

// requestStart is when req's duration starts: when the core read it, or
// now for a request made without one.
func requestStart(req *server.Request) time.Time {
	if req.Received.IsZero() {
		return time.Now()
	}
	return req.Received
}

// requestLogger writes the records of [WithRequestLog] with one logger.
type requestLogger struct {
	logger *slog.Logger
	level  func(*server.Request, server.Outcome) slog.Level
	// With the handler of LogHandler (direct), the record is built with
	// its ids already added: the same record, without copying it in
	// Handle; when LogHandler wraps a slogtext.LineHandler, it is handed the
	// attributes in text, with no record at all.
	lh     logHandler
	direct bool
	text   slogtext.LineHandler
	lines  *sync.Pool // of *textFields, the attributes of a line; with text
}

// newRequestLogger returns the requestLogger of logger, not nil, with
// the level of cfg ([WithLogLevel]).
func newRequestLogger(logger *slog.Logger, cfg loggingConfig) *requestLogger {
	l := &requestLogger{logger: logger, level: cfg.level}
	if l.level == nil {
		l.level = DefaultLogLevel
	}
	l.lh, l.direct = logger.Handler().(logHandler)
	if l.direct {
		if l.text, _ = l.lh.next.(slogtext.LineHandler); l.text != nil {
			l.lines = &sync.Pool{New: func() any { return &textFields{b: make([]byte, 0, 256)} }}
		}
	}
	return l
}

// log writes the record of req, which ended with out and started at
// start, with ctx, the context the chain gave the request; scope is what
// the caller read of ctx already, nil when it read nothing.
func (l *requestLogger) log(ctx context.Context, scope *requestScope, req *server.Request, out server.Outcome, start time.Time) {
	level := l.level(req, out)
	if !l.logger.Enabled(ctx, level) {
		return
	}
	if scope == nil {
		scope = &requestScope{principal: principalOf(req), span: trace.SpanContextFromContext(ctx)}
	}
	switch {
	case l.text != nil:
		logRequestText(ctx, scope, l.text, l.lines, level, req, out, start)
	case l.direct:
		logRequestTo(ctx, scope.principal, l.lh, level, req, out, start)
	default:
		logRequest(ctx, scope.principal, l.logger, level, req, out, out.Ended.Sub(start))
	}
}

// logRequest logs the record of [WithRequestLog] through logger.
func logRequest(ctx context.Context, p *auth.Principal, logger *slog.Logger, level slog.Level, req *server.Request, out server.Outcome, d time.Duration) {
	var buf [11]slog.Attr
	logger.LogAttrs(ctx, level, "request", requestAttrs(buf[:0], req, p, out, d)...)
}

// logRequestTo writes the record that logRequest would pass to h, as
// [slog.Logger.LogAttrs] builds it (time, level, message) and with the ids
// h would add, but in one record: h.Handle would copy it to add them. The
// record has no pc: its source would be this function, for every request,
// which tells a reader nothing (and finding it costs more than formatting
// the line's duration). The caller has checked that h is enabled at level.
func logRequestTo(ctx context.Context, p *auth.Principal, h logHandler, level slog.Level, req *server.Request, out server.Outcome, start time.Time) {
	now := out.Ended
	r := slog.NewRecord(now, level, "request", 0)
	var buf [15]slog.Attr
	attrs := requestAttrs(buf[:0], req, p, out, now.Sub(start))
	// The record carries request_id, and session_id for a request in a
	// session: what logHandler.Handle would find with recordHas.
	attrs = appendIDs(ctx, attrs, req.InSession(), true)
	r.AddAttrs(attrs...)
	_ = h.next.Handle(ctx, r) // as Logger.LogAttrs, which drops the error
}

// logRequestText writes the record that logRequestTo would pass to h's
// Handle through HandleTextLine: its fields written in text as they are
// read (no slog.Attr is made), the trace ids straight from the span
// context scope holds. lines holds the buffers, as *textFields.
func logRequestText(ctx context.Context, scope *requestScope, h slogtext.LineHandler, lines *sync.Pool, level slog.Level, req *server.Request, out server.Outcome, start time.Time) {
	now := out.Ended
	// The pool holds textFields, not their buffers: handed to requestFields
	// as a fieldSink, a textFields made here would escape, an allocation
	// per line.
	text := lines.Get().(*textFields)
	text.b = text.b[:0]
	requestFields(text, req, scope.principal, out, now.Sub(start))
	b := text.b
	// As appendIDs, for a record that carries request_id and, in a
	// session, session_id: the trace ids only.
	if sc := scope.span; sc.IsValid() {
		tid, sid := sc.TraceID(), sc.SpanID()
		b = append(b, " "+logTraceID+"="...)
		b = hex.AppendEncode(b, tid[:])
		b = append(b, " "+logSpanID+"="...)
		b = hex.AppendEncode(b, sid[:])
	}
	_ = h.HandleTextLine(ctx, now, level, "request", b) // as Logger.LogAttrs, which drops the error
	if cap(b) <= 4<<10 {
		text.b = b
		lines.Put(text)
	}
}

// requestAttrs appends the attributes of the record of [WithRequestLog] to attrs;
// p is req's principal, nil without one.
func requestAttrs(attrs []slog.Attr, req *server.Request, p *auth.Principal, out server.Outcome, d time.Duration) []slog.Attr {
	f := attrFields{attrs: attrs}
	requestFields(&f, req, p, out, d)
	return f.attrs
}

// actorOf returns who acts on behalf of p's subject, as the request log
// shows it: the act chain's subjects, outermost first, each "on behalf of"
// the next ("agent on behalf of gateway"; the subject follows); "" for a
// token of the subject's own.
func actorOf(p *auth.Principal) string {
	if len(p.Actors) == 1 {
		return p.Actors[0]
	}
	return strings.Join(p.Actors, " on behalf of ")
}

// fieldSink takes the fields of a record in order: a value of a plain kind
// under its key.
type fieldSink interface {
	str(key, value string)
	id(key string, id transport.ID)
	dur(key string, d time.Duration)
	int(key string, n int64)
	flag(key string, b bool)
}

// requestFields hands the fields of the record of [WithRequestLog] to f, in
// order: the one definition of the record, which requestAttrs makes
// attributes of and logRequestText writes in text. p is req's principal,
// nil without one.
func requestFields(f fieldSink, req *server.Request, p *auth.Principal, out server.Outcome, d time.Duration) {
	f.str(logMethod, req.Method)
	switch req.Method {
	case "tools/call":
		f.str(logTool, req.Name)
	case "prompts/get":
		f.str(logPrompt, req.Name)
	}
	f.id(logRequestID, req.ID)
	if req.InSession() {
		f.str(logSessionID, req.Session.ID())
	}
	if p != nil {
		f.str(logSubject, p.Subject)
		if len(p.Actors) > 0 {
			f.str(logActor, actorOf(p))
		}
	}
	f.dur(logDuration, d)
	outcome, errType := classifyOutcome(out)
	f.str(logOutcome, outcome)
	switch outcome {
	case mcpconv.OutcomeError:
		f.int(logCode, int64(server.CodeOf(out.Err)))
		f.str(logError, out.Err.Error())
		if r := chainCause(out.Err); r != protocol.ReasonNone {
			f.str(logCause, r.String())
		}
	case mcpconv.OutcomeCancelled:
		f.str(logCause, server.ReasonOfCause(out.Cause).String())
		if answeredCancel(out) { // answered by the transport, not dropped
			f.int(logCode, int64(server.CodeOf(out.Err)))
			f.str(logError, out.Err.Error())
		} else {
			f.str(logReason, out.Dropped.String())
		}
	case mcpconv.OutcomeDropped:
		f.str(logReason, out.Dropped.String())
		if out.WriteErr != nil {
			f.str(logError, out.WriteErr.Error())
		}
	case mcpconv.OutcomeOK:
		if errType == mcpconv.ErrorTypeTool || errType == mcpconv.ErrorTypeInvalidArguments {
			f.flag(logToolError, true)
		}
	}
	if _, labeled, _ := outcomeLabels(out); labeled != "" { // one vocabulary: the metrics' error_type, the span's error.type
		f.str(logErrorType, labeled)
	}
}

// attrFields makes each field an attribute.
type attrFields struct{ attrs []slog.Attr }

func (f *attrFields) str(key, value string) { f.attrs = append(f.attrs, slog.String(key, value)) }
func (f *attrFields) id(key string, id transport.ID) {
	f.attrs = append(f.attrs, slog.String(key, id.String()))
}

func (f *attrFields) dur(key string, d time.Duration) {
	f.attrs = append(f.attrs, slog.Float64(key, d.Seconds()))
}
func (f *attrFields) int(key string, n int64) { f.attrs = append(f.attrs, slog.Int64(key, n)) }
func (f *attrFields) flag(key string, b bool) { f.attrs = append(f.attrs, slog.Bool(key, b)) }

// textFields writes each field as slog.TextHandler writes its attribute
// (slogtext.AppendAttr): " key=value". The keys are Vigil's, none of which
// needs quoting.
type textFields struct{ b []byte }

func (f *textFields) key(key string) {
	f.b = append(f.b, ' ')
	f.b = append(f.b, key...)
	f.b = append(f.b, '=')
}

func (f *textFields) str(key, value string) {
	f.key(key)
	f.b = slogtext.AppendString(f.b, value)
}

// id writes id as the string attribute attrFields makes of it: an integer
// id's digits (and sign) never need quoting.
func (f *textFields) id(key string, id transport.ID) {
	f.key(key)
	if id.IsString() {
		f.b = slogtext.AppendString(f.b, id.String())
		return
	}
	f.b, _ = id.AppendText(f.b)
}

func (f *textFields) dur(key string, d time.Duration) {
	f.key(key)
	f.b = slogtext.AppendValue(f.b, slog.Float64Value(d.Seconds()))
}

func (f *textFields) int(key string, n int64) {
	f.key(key)
	f.b = strconv.AppendInt(f.b, n, 10)
}

func (f *textFields) flag(key string, b bool) {
	f.key(key)
	f.b = strconv.AppendBool(f.b, b)
}
