package middleware

import (
	"context"
	"encoding/hex"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
)

// Log attribute keys that [LogHandler] adds.
const (
	logTraceID   = "trace_id"
	logSpanID    = "span_id"
	logSessionID = "session_id"
	logRequestID = "request_id"
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
// record already carries (as those of [WithRequestLog] do) is not added again. A nil next discards everything. The
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
	var ids [4]slog.Attr
	sessionDone, requestDone := false, false
	if server.RequestFromContext(ctx) != nil {
		sessionDone, requestDone = recordHas(r)
	}
	if extra := appendIDs(ctx, ids[:0], sessionDone, requestDone); len(extra) > 0 {
		r = r.Clone() // the caller's record may share its attribute storage
		r.AddAttrs(extra...)
	}
	return h.next.Handle(ctx, r)
}

// appendIDs appends to attrs the ids that [LogHandler] adds for ctx, in its
// order: trace_id and span_id of a valid span, then session_id and
// request_id of the request in ctx, each unless the record already carries
// it (hasSession, hasRequest). It allocates once at most: the two hex ids
// share one string.
func appendIDs(ctx context.Context, attrs []slog.Attr, hasSession, hasRequest bool) []slog.Attr {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tid, sid := sc.TraceID(), sc.SpanID()
		var buf [2*len(tid) + 2*len(sid)]byte
		hex.Encode(buf[:2*len(tid)], tid[:])
		hex.Encode(buf[2*len(tid):], sid[:])
		ids := string(buf[:]) // as TraceID.String and SpanID.String, in one allocation
		attrs = append(attrs, slog.String(logTraceID, ids[:2*len(tid)]), slog.String(logSpanID, ids[2*len(tid):]))
	}
	if req := server.RequestFromContext(ctx); req != nil {
		if req.InSession() && !hasSession {
			attrs = append(attrs, slog.String(logSessionID, req.Session.ID()))
		}
		if !req.IsNotification() && !hasRequest {
			attrs = append(attrs, slog.String(logRequestID, req.ID.String()))
		}
	}
	return attrs
}

// recordHas reports whether r's own attributes already carry session_id and
// request_id (as the records of [WithRequestLog] do).
func recordHas(r slog.Record) (session, request bool) {
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case logSessionID:
			session = true
		case logRequestID:
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
