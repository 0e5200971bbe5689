package slogtext

import (
	"log/slog"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// PlainKind reports whether AppendValue formats values of kind k.
func PlainKind(k slog.Kind) bool {
	switch k {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
		return true
	}
	return false
}

// AppendAttr appends " key=value" for a, whose key is not empty and whose
// value is of a PlainKind.
func AppendAttr(b []byte, a slog.Attr) []byte {
	b = append(b, ' ')
	b = AppendString(b, a.Key)
	b = append(b, '=')
	return AppendValue(b, a.Value)
}

// AppendValue appends v, of a PlainKind, as TextHandler does.
func AppendValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return AppendString(b, v.String())
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
		return AppendRFC3339Millis(b, v.Time())
	}
}

// AppendString appends s, quoted when TextHandler would quote it.
func AppendString(b []byte, s string) []byte {
	if NeedsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// NeedsQuoting is log/slog's: an empty string, a space, '=', a character
// JSON would escape (except a backslash), invalid UTF-8, or a Unicode space
// or unprintable rune. ASCII is checked eight bytes at a time: every key
// and value of every log line passes through here.
func NeedsQuoting(s string) bool {
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
			if b <= ' ' || b == '"' || b == '=' {
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

// AppendRFC3339Millis is log/slog's time format: RFC 3339 with exactly
// three digits of milliseconds.
func AppendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...) // drop the 4th digit
}
