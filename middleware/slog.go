package middleware

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
)

// Log attribute keys that [LogHandler] adds.
const (
	LogTraceID   = "trace_id"
	LogSpanID    = "span_id"
	LogSessionID = "session_id"
	LogRequestID = "request_id"
)

// LogHandler returns a [slog.Handler] that adds to every record it passes
// to next the ids found in the record's context: trace_id and span_id of
// the current span (when valid), session_id and request_id of the MCP
// request being handled (see [server.RequestFromContext]; session_id is
// left out for a stateless request, request_id for a notification). Log
// with the Context variants (slog.InfoContext, Logger.InfoContext) and the
// handler's ctx for them to appear. Records without such a context pass
// unchanged.
//
// The ids are added where the record's own attributes go, so after
// WithGroup they land inside the group; a session_id or request_id the
// record already carries (as those of [Logging] do) is not added again. A nil next discards everything. The
// handler is safe for concurrent use if next is.
func LogHandler(next slog.Handler) slog.Handler {
	if next == nil {
		next = slog.DiscardHandler
	}
	return logHandler{next: next}
}

type logHandler struct{ next slog.Handler }

func (h logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	var attrs [4]slog.Attr
	n := 0
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		attrs[0], attrs[1] = slog.String(LogTraceID, sc.TraceID().String()), slog.String(LogSpanID, sc.SpanID().String())
		n = 2
	}
	if req := server.RequestFromContext(ctx); req != nil {
		hasSession, hasRequest := recordHas(r)
		if req.InSession() && !hasSession {
			attrs[n] = slog.String(LogSessionID, req.Session.ID())
			n++
		}
		if !req.IsNotification() && !hasRequest {
			attrs[n] = slog.String(LogRequestID, req.ID.String())
			n++
		}
	}
	if n > 0 {
		r = r.Clone() // the caller's record may share its attribute storage
		r.AddAttrs(attrs[:n]...)
	}
	return h.next.Handle(ctx, r)
}

// recordHas reports whether r's own attributes already carry session_id and
// request_id (as the records of [Logging] do).
func recordHas(r slog.Record) (session, request bool) {
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case LogSessionID:
			session = true
		case LogRequestID:
			request = true
		}
		return !session || !request
	})
	return session, request
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return logHandler{next: h.next.WithAttrs(as)}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{next: h.next.WithGroup(name)}
}
