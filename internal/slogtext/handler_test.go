package slogtext

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Handler writes what slog.TextHandler writes, byte for byte, on its
// direct path and when it hands the record over.
func TestTextHandlerMatchesSlog(t *testing.T) {
	at := time.Date(2026, 7, 28, 10, 4, 5, 123456789, time.FixedZone("X", 3600))
	records := []struct {
		level slog.Level
		msg   string
		attrs []slog.Attr
	}{
		{slog.LevelInfo, "request", []slog.Attr{
			slog.String("method", "tools/call"), slog.String("tool", "echo"), slog.String("request_id", "42"),
			slog.String("session_id", "aB-_09"), slog.Duration("duration", 1234567*time.Nanosecond),
			slog.String("outcome", "ok"), slog.String("trace_id", "0af7651916cd43dd8448eb211c80319c"),
		}},
		{slog.LevelWarn, "with spaces and = and \"quotes\"", []slog.Attr{
			slog.String("error", "a b"), slog.String("e", ""), slog.String("eq", "a=b"), slog.String("nl", "x\ny"),
			slog.String("bs", `a\b`), slog.String("uni", "µs é"), slog.String("nbsp", "a\u00a0b"), slog.String("ctl", "\x7f\x01"),
			slog.String("bad", "\xff"), slog.String("key with space", "v"),
			slog.Int64("code", -32001), slog.Uint64("u", math.MaxUint64), slog.Float64("f", 0.1), slog.Float64("inf", math.Inf(1)),
			slog.Bool("tool_error", true), slog.Duration("d", 0), slog.Time("at", at),
		}},
		{slog.LevelDebug, "", nil},
		{slog.LevelInfo + 2, "custom level", nil},
		{slog.LevelError, "handed over", []slog.Attr{slog.Any("error", errors.New("boom")), slog.String("a", "b")}},
		{slog.LevelError, "group", []slog.Attr{slog.Group("g", slog.Int("x", 1))}},
		{slog.LevelWarn, "handed over midway", []slog.Attr{slog.String("a", "b"), slog.Int("n", 3), slog.Any("error", errors.New("boom"))}},
		{slog.LevelError, "empty key", []slog.Attr{slog.String("", "v")}},
	}
	for _, withTime := range []bool{true, false} {
		for _, rec := range records {
			var want, got bytes.Buffer
			ref := slog.NewTextHandler(&want, &slog.HandlerOptions{Level: slog.LevelDebug})
			h := NewHandler(&got, slog.LevelDebug)
			r := slog.NewRecord(time.Time{}, rec.level, rec.msg, 0)
			if withTime {
				r.Time = at
			}
			r.AddAttrs(rec.attrs...)
			require.NoError(t, ref.Handle(context.Background(), r))
			require.NoError(t, h.Handle(context.Background(), r))
			assert.Equal(t, want.String(), got.String())

			// The same record handed over with its attributes in text,
			// as middleware.Logging hands over its own.
			var attrs []byte
			plain := true
			for _, a := range rec.attrs {
				if plain = plain && a.Key != "" && PlainKind(a.Value.Kind()); plain {
					attrs = AppendAttr(attrs, a)
				}
			}
			if plain {
				got.Reset()
				require.NoError(t, h.HandleTextLine(context.Background(), r.Time, rec.level, rec.msg, attrs))
				assert.Equal(t, want.String(), got.String(), "HandleTextLine")
			}
		}
	}

	// WithAttrs and WithGroup are the TextHandler's.
	var want, got bytes.Buffer
	slog.New(slog.NewTextHandler(&want, nil)).With("k", "v").WithGroup("g").Info("m", "a", 1)
	slog.New(NewHandler(&got, slog.LevelInfo)).With("k", "v").WithGroup("g").Info("m", "a", 1)
	assert.Equal(t, trimTime(want.String()), trimTime(got.String()))

	h := NewHandler(&got, slog.LevelWarn)
	assert.False(t, h.Enabled(context.Background(), slog.LevelInfo))
	assert.True(t, h.Enabled(context.Background(), slog.LevelWarn))
}

// trimTime drops the time attribute that starts a TextHandler line.
func trimTime(line string) string {
	if i := bytes.IndexByte([]byte(line), ' '); i >= 0 {
		return line[i:]
	}
	return line
}

// BenchmarkRequestLine: the request record of middleware.Logging through
// Handler and, for comparison, slog.TextHandler, to io.Discard.
func BenchmarkRequestLine(b *testing.B) {
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
	r.AddAttrs(slog.String("method", "tools/call"), slog.String("tool", "echo"), slog.String("request_id", "42"),
		slog.String("session_id", "Jx3kq0b1Xw9c2pLrT5uV7A"), slog.Duration("duration", 51234*time.Nanosecond),
		slog.String("outcome", "ok"), slog.String("trace_id", "0af7651916cd43dd8448eb211c80319c"), slog.String("span_id", "b7ad6b7169203331"))
	for _, c := range []struct {
		name string
		h    slog.Handler
	}{
		{"vigil", NewHandler(io.Discard, slog.LevelInfo)},
		{"slog", slog.NewTextHandler(io.Discard, nil)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = c.h.Handle(context.Background(), r)
			}
		})
	}
}

// FuzzTextHandlerQuoting: for any key and string value, the direct path
// quotes exactly what slog.TextHandler quotes (NeedsQuoting reads ASCII
// eight bytes at a time; the seeds put each byte it looks for in every
// position of a word, and past one).
func FuzzTextHandlerQuoting(f *testing.F) {
	for _, special := range []string{" ", "=", `"`, "\x00", "\x1f", "\n", "\x7f", `\`, "!", "<", ">", "~", "é", "\u00a0", "\xff", "\u2028"} {
		for pos := range 10 {
			v := []byte("abcdefghij")
			f.Add("key", string(v[:pos])+special+string(v[pos:]))
		}
	}
	f.Add("", "")
	f.Add("tools/call", "0af7651916cd43dd8448eb211c80319c")
	f.Fuzz(func(t *testing.T, key, value string) {
		at := time.Date(2026, 7, 28, 10, 4, 5, 0, time.UTC)
		r := slog.NewRecord(at, slog.LevelInfo, value, 0)
		r.AddAttrs(slog.String(key, value))
		var want, got bytes.Buffer
		require.NoError(t, slog.NewTextHandler(&want, nil).Handle(context.Background(), r))
		require.NoError(t, NewHandler(&got, slog.LevelInfo).Handle(context.Background(), r))
		if want.String() != got.String() {
			t.Fatalf("key %q value %q:\nslog   %s\nvigil  %s", key, value, want.String(), got.String())
		}
	})
}

// appendTime, which formats a second once, writes what
// AppendRFC3339Millis writes for any time: within one second and across
// seconds, zones and the years whose width differs.
func TestAppendTimeMatchesRFC3339Millis(t *testing.T) {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("east", 5*3600+30*60), time.FixedZone("west", -7*3600)}
	if berlin, err := time.LoadLocation("Europe/Berlin"); err == nil {
		zones = append(zones, berlin) // summer time starts and ends
	}
	times := []time.Time{
		time.Date(2026, 3, 29, 0, 59, 59, 999_999_999, time.UTC), // the second before Berlin's clocks go forward
		time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC),
		time.Date(2026, 10, 25, 0, 59, 59, 500_000_000, time.UTC),
		time.Date(2026, 10, 25, 1, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		base := time.Unix(rng.Int64N(1<<34)-1<<33, rng.Int64N(1e9))
		times = append(times, base, base.Add(time.Duration(rng.Int64N(int64(time.Second)))))
	}
	h := NewHandler(io.Discard, slog.LevelInfo)
	for _, at := range times {
		for _, loc := range zones {
			tt := at.In(loc)
			want := string(AppendRFC3339Millis(nil, tt))
			if got := string(h.appendTime(nil, tt)); got != want {
				t.Fatalf("%v: appendTime %q, slogtext.AppendRFC3339Millis %q", tt, got, want)
			}
			if got := string(h.appendTime(nil, tt)); got != want { // now from the stamp
				t.Fatalf("%v again: appendTime %q, slogtext.AppendRFC3339Millis %q", tt, got, want)
			}
		}
	}
}
