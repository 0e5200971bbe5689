package slogtext_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/slogtext"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// textOf returns the attributes of a as slog's TextHandler writes them,
// with their leading space.
func textOf(t *testing.T, a slog.Attr) string {
	t.Helper()
	var buf bytes.Buffer
	r := slog.NewRecord(time.Time{}, slog.LevelInfo, "m", 0)
	r.AddAttrs(a)
	if err := slog.NewTextHandler(&buf, nil).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(strings.TrimPrefix(buf.String(), "level=INFO msg=m"), "\n")
}

// AppendAttr writes every plain kind as the TextHandler does.
func TestAppendAttrMatchesTextHandler(t *testing.T) {
	at := time.Date(2026, 7, 28, 10, 4, 5, 123456789, time.FixedZone("X", 3600))
	for _, a := range []slog.Attr{
		slog.String("method", "tools/call"), slog.String("e", ""), slog.String("sp ace", "a b"), slog.String("eq", "a=b"),
		slog.String("q", `say "hi"`), slog.String("nl", "x\ny"), slog.String("bs", `a\b`), slog.String("uni", "µs é"),
		slog.String("nbsp", "a\u00a0b"), slog.String("ctl", "\x7f\x01"), slog.String("bad", "\xff"),
		slog.String("long", strings.Repeat("abcdefgh", 5)+"="), slog.Int64("code", -32001), slog.Uint64("u", math.MaxUint64),
		slog.Float64("f", 0.1), slog.Float64("inf", math.Inf(-1)), slog.Bool("tool_error", true),
		slog.Duration("duration", 276666*time.Nanosecond), slog.Duration("zero", 0), slog.Time("at", at),
	} {
		if !slogtext.PlainKind(a.Value.Kind()) {
			t.Fatalf("%s: kind %v is plain", a.Key, a.Value.Kind())
		}
		if got, want := string(slogtext.AppendAttr(nil, a)), textOf(t, a); got != want {
			t.Errorf("%s: AppendAttr %q, TextHandler %q", a.Key, got, want)
		}
	}
	for _, k := range []slog.Kind{slog.KindAny, slog.KindGroup, slog.KindLogValuer} {
		if slogtext.PlainKind(k) {
			t.Errorf("kind %v is not plain", k)
		}
	}
}

func ExampleAppendAttr() {
	line := []byte("level=INFO msg=request")
	line = slogtext.AppendAttr(line, slog.String("tool", "echo"))
	line = slogtext.AppendAttr(line, slog.String("error", "unknown tool"))
	line = slogtext.AppendAttr(line, slog.Duration("duration", 1500*time.Microsecond))
	fmt.Println(string(line))
	// Output: level=INFO msg=request tool=echo error="unknown tool" duration=1.5ms
}

// The bidirectional controls and zero-width characters a client may put in
// a name are quoted and escaped (\u202e), as slog's TextHandler does: they
// are not printable (issue 56 N10).
func TestAppendStringEscapesInvisible(t *testing.T) {
	for _, r := range []rune{0x061C, 0x200B, 0x200E, 0x200F, 0x202A, 0x202E, 0x2066, 0x2069, 0xFEFF} {
		s := "tool" + string(r) + "name"
		got := string(slogtext.AppendString(nil, s))
		if strings.ContainsRune(got, r) || got != fmt.Sprintf(`"tool\u%04xname"`, r) {
			t.Errorf("%U: %s", r, got)
		}
		if want := textOf(t, slog.String("k", s)); " k="+got != want {
			t.Errorf("%U: %s, TextHandler %s", r, got, want)
		}
	}
}
