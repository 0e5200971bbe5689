package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vigil-mcp/vigil/internal/asyncwriter"
)

// textHandler writes what slog.TextHandler (no ReplaceAttr, no source)
// writes, byte for byte, but formats the records it can straight into a
// pooled buffer: the time, level and message, and attributes of the plain
// kinds (string, integers, float, bool, duration, time) under keys of
// their own. A record with anything else (a group, an error or other
// value of kind Any, a LogValuer, an empty key) goes to the TextHandler
// itself, as does everything once WithAttrs or WithGroup was called. The
// per-request log line of the middleware takes the direct path.
type textHandler struct {
	level slog.Leveler
	out   io.Writer    // whose concurrent writes are each kept whole
	text  slog.Handler // the TextHandler, writing to out
	// stamp is the last second a record's time fell in, formatted: lines
	// of one second format only their milliseconds.
	stamp atomic.Pointer[secondStamp]
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

// newTextHandler returns the handler, writing to w, enabled from level.
func newTextHandler(w io.Writer, level slog.Leveler) *textHandler {
	out := w
	if _, ok := w.(*asyncwriter.Writer); !ok { // which keeps concurrent writes whole itself
		out = &lockedWriter{w: w}
	}
	return &textHandler{level: level, out: out, text: slog.NewTextHandler(out, &slog.HandlerOptions{Level: level})}
}

func (h *textHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *textHandler) WithAttrs(as []slog.Attr) slog.Handler { return h.text.WithAttrs(as) }

func (h *textHandler) WithGroup(name string) slog.Handler { return h.text.WithGroup(name) }

// textBufs holds the buffers of the direct path.
var textBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (h *textHandler) Handle(ctx context.Context, r slog.Record) error {
	bp := textBufs.Get().(*[]byte)
	b := (*bp)[:0]
	if !r.Time.IsZero() {
		b = append(b, "time="...)
		b = h.appendTime(b, r.Time.Round(0))
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = appendTextString(b, r.Level.String())
	b = append(b, " msg="...)
	b = appendTextString(b, r.Message)
	// One pass: a record with an attribute the direct path does not
	// format goes to the TextHandler instead, the line begun discarded.
	plain := true
	r.Attrs(func(a slog.Attr) bool {
		if plain = a.Key != "" && plainKind(a.Value.Kind()); !plain {
			return false
		}
		b = append(b, ' ')
		b = appendTextString(b, a.Key)
		b = append(b, '=')
		b = appendTextValue(b, a.Value)
		return true
	})
	var err error
	if plain {
		b = append(b, '\n')
		_, err = h.out.Write(b)
	}
	if cap(b) <= 16<<10 { // as slog's own buffers: big ones are not kept
		*bp = b
		textBufs.Put(bp)
	}
	if !plain {
		return h.text.Handle(ctx, r)
	}
	return err
}

// plainKind reports whether the direct path formats values of kind k.
func plainKind(k slog.Kind) bool {
	switch k {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
		return true
	}
	return false
}

// appendTextValue appends v, of a plainKind, as TextHandler does.
func appendTextValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendTextString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		return strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		return append(b, v.Duration().String()...)
	default: // slog.KindTime
		return appendRFC3339Millis(b, v.Time())
	}
}

// appendTextString appends s, quoted when TextHandler would quote it.
func appendTextString(b []byte, s string) []byte {
	if needsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// needsQuoting is log/slog's: an empty string, a space, '=', a character
// JSON would escape (except a backslash), invalid UTF-8, or a Unicode space
// or unprintable rune. ASCII is checked eight bytes at a time: every key
// and value of every log line passes through here.
func needsQuoting(s string) bool {
	if len(s) == 0 {
		return true
	}
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := load64(s[i : i+8])
		if w&highBits != 0 {
			break // not ASCII: rune by rune from here
		}
		// A byte below '!' (a control character or a space), a '"' or
		// an '='.
		if hasLess(w, '!') || hasZero(w^('"'*lowBits)) || hasZero(w^('='*lowBits)) {
			return true
		}
	}
	for i < len(s) {
		b := s[i]
		if b < utf8.RuneSelf {
			if quoted[b] {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// The bytes of a word, each 1, and each with only its high bit set.
const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// load64 reads the eight bytes of s as one little-endian word.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// hasZero reports whether a byte of w is zero.
func hasZero(w uint64) bool { return (w-lowBits)&^w&highBits != 0 }

// hasLess reports whether a byte of w, whose bytes are all ASCII, is below n
// (n <= 128).
func hasLess(w uint64, n byte) bool { return (w-lowBits*uint64(n))&^w&highBits != 0 }

// quoted holds, for each ASCII byte, whether needsQuoting quotes a string
// that has it: a control character, a space, '"' or '='.
var quoted = func() (q [utf8.RuneSelf]bool) {
	for b := range q {
		q[b] = b < ' ' || b == ' ' || b == '"' || b == '='
	}
	return q
}()

// appendRFC3339Millis is log/slog's: RFC 3339 with exactly three digits of
// milliseconds.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...) // drop the 4th digit
}

// secondStamp is a second of a location, formatted as appendRFC3339Millis
// formats its times: what comes before the milliseconds, and the zone.
type secondStamp struct {
	unix       int64
	loc        *time.Location
	date, zone string // "2006-01-02T15:04:05" and "Z" or "-07:00"
}

// appendTime appends t, without a monotonic reading, as appendRFC3339Millis
// does, formatting only the milliseconds when t falls in the second of the
// last record.
func (h *textHandler) appendTime(b []byte, t time.Time) []byte {
	st := h.stamp.Load()
	if st == nil || st.unix != t.Unix() || st.loc != t.Location() {
		if y := t.Year(); y < 0 || y > 9999 { // a date of another width
			return appendRFC3339Millis(b, t)
		}
		full := string(appendRFC3339Millis(nil, t))
		const dateLen = len("2006-01-02T15:04:05")
		st = &secondStamp{unix: t.Unix(), loc: t.Location(), date: full[:dateLen], zone: full[dateLen+len(".000"):]}
		h.stamp.Store(st)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, st.date...)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, st.zone...)
}
