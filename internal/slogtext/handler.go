package slogtext

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/internal/asyncwriter"
)

// Handler writes what slog.TextHandler (no ReplaceAttr, no source)
// writes, byte for byte, but formats the records it can straight into a
// pooled buffer: the time, level and message, and attributes of the plain
// kinds (string, integers, float, bool, duration, time) under keys of
// their own. A record with anything else (a group, an error or other
// value of kind Any, a LogValuer, an empty key) goes to the TextHandler
// itself, as does everything once WithAttrs or WithGroup was called. The
// per-request log line of middleware.WithRequestLog takes the direct path
// (HandleTextLine, as [LineHandler]).
type Handler struct {
	level slog.Leveler
	out   io.Writer    // whose concurrent writes are each kept whole
	text  slog.Handler // the TextHandler, writing to out
	// stamp is the last second a record's time fell in, formatted: lines
	// of one second format only their milliseconds.
	stamp atomic.Pointer[secondStamp]
	bufs  sync.Pool // *[]byte: the buffers of the direct path
}

// lockedWriter serializes the writes of the direct path and the
// TextHandler's, as one TextHandler does its own, for a writer that does
// not (an asyncwriter.Writer does).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// NewHandler returns a Handler writing to w, enabled from level.
func NewHandler(w io.Writer, level slog.Leveler) *Handler {
	out := w
	if _, ok := w.(*asyncwriter.Writer); !ok { // which keeps concurrent writes whole itself
		out = &lockedWriter{w: w}
	}
	h := &Handler{level: level, out: out, text: slog.NewTextHandler(out, &slog.HandlerOptions{Level: level})}
	h.bufs.New = func() any { b := make([]byte, 0, 512); return &b }
	return h
}

// Enabled reports whether l is at least the handler's level.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

// WithAttrs returns the TextHandler's handler with as.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler { return h.text.WithAttrs(as) }

// WithGroup returns the TextHandler's handler with the group name.
func (h *Handler) WithGroup(name string) slog.Handler { return h.text.WithGroup(name) }

// Handle writes r as the TextHandler would.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	bp := h.bufs.Get().(*[]byte)
	b := h.appendPrefix((*bp)[:0], r.Time, r.Level, r.Message)
	// One pass: a record with an attribute the direct path does not
	// format goes to the TextHandler instead, the line begun discarded.
	plain := true
	r.Attrs(func(a slog.Attr) bool {
		if plain = a.Key != "" && PlainKind(a.Value.Kind()); !plain {
			return false
		}
		b = AppendAttr(b, a)
		return true
	})
	var err error
	if plain {
		b = append(b, '\n')
		_, err = h.out.Write(b)
	}
	h.putBuf(bp, b)
	if !plain {
		return h.text.Handle(ctx, r)
	}
	return err
}

// HandleTextLine writes the record of time t, level and msg whose
// attributes attrs holds already in the TextHandler's form (see
// [LineHandler]): the per-request line of middleware.WithRequestLog.
func (h *Handler) HandleTextLine(_ context.Context, t time.Time, level slog.Level, msg string, attrs []byte) error {
	bp := h.bufs.Get().(*[]byte)
	b := h.appendPrefix((*bp)[:0], t, level, msg)
	b = append(b, attrs...)
	b = append(b, '\n')
	_, err := h.out.Write(b)
	h.putBuf(bp, b)
	return err
}

// appendPrefix appends what starts every line: the time (none when zero),
// the level and the message.
func (h *Handler) appendPrefix(b []byte, t time.Time, level slog.Level, msg string) []byte {
	if !t.IsZero() {
		b = append(b, "time="...)
		b = h.appendTime(b, t.Round(0))
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = AppendString(b, level.String())
	b = append(b, " msg="...)
	return AppendString(b, msg)
}

// putBuf returns b, grown from *bp, to the pool, unless it grew big.
func (h *Handler) putBuf(bp *[]byte, b []byte) {
	if cap(b) <= 16<<10 { // as slog's own buffers: big ones are not kept
		*bp = b
		h.bufs.Put(bp)
	}
}

// secondStamp is a second of a location, formatted as
// AppendRFC3339Millis formats its times: what comes before the
// milliseconds, and the zone.
type secondStamp struct {
	unix       int64
	loc        *time.Location
	date, zone string // "2006-01-02T15:04:05" and "Z" or "-07:00"
}

// appendTime appends t, without a monotonic reading, as
// AppendRFC3339Millis does, formatting only the milliseconds when
// t falls in the second of the last record.
func (h *Handler) appendTime(b []byte, t time.Time) []byte {
	st := h.stamp.Load()
	if st == nil || st.unix != t.Unix() || st.loc != t.Location() {
		if y := t.Year(); y < 0 || y > 9999 { // a date of another width
			return AppendRFC3339Millis(b, t)
		}
		full := string(AppendRFC3339Millis(nil, t))
		const dateLen = len("2006-01-02T15:04:05")
		st = &secondStamp{unix: t.Unix(), loc: t.Location(), date: full[:dateLen], zone: full[dateLen+len(".000"):]}
		h.stamp.Store(st)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, st.date...)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, st.zone...)
}
