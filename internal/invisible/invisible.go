package invisible

import (
	"encoding/binary"
	"io"
	"unicode/utf8"
)

// Is reports whether r is a format character Escape escapes: the
// bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E,
// U+200F, U+202A–U+202E, U+2066–U+2069) and the zero-width and invisible
// characters (U+200B–U+200D, U+2060–U+2064, U+FEFF).
func Is(r rune) bool {
	switch {
	case r == 0x061C, r == 0xFEFF:
		return true
	case r < 0x200B || r > 0x2069:
		return false
	}
	return r <= 0x200F || (r >= 0x202A && r <= 0x202E) || (r >= 0x2060 && r <= 0x2064) || r >= 0x2066
}

// Escape returns b with each character of [Is] written as \uXXXX
// (lowercase hex, as encoding/json writes U+2028): b itself, unchanged
// and not copied, when it holds none. Invalid UTF-8 is left as it is.
func Escape(b []byte) []byte {
	var out []byte // nil until a character is escaped
	for i := first(b); i >= 0; {
		r, size := utf8.DecodeRune(b[i:])
		if Is(r) {
			if out == nil {
				out = make([]byte, 0, len(b)+8)
			}
			out = appendEscape(append(out, b[:i]...), r)
			b, i = b[i+size:], 0
		} else {
			i += size
		}
		if n := first(b[i:]); n < 0 {
			i = -1
		} else {
			i += n
		}
	}
	if out == nil {
		return b
	}
	return append(out, b...)
}

// appendEscape appends \uXXXX for r (< 0x10000).
func appendEscape(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
}

// first returns the index of the first byte of b that may start a
// character of [Is] (0xD8, 0xE2 or 0xEF, their UTF-8 lead bytes), or -1.
// ASCII is skipped eight bytes at a time.
func first(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == 0xD8 || c == 0xE2 || c == 0xEF {
			return i
		}
	}
	return -1
}

// Writer passes each Write on to W, in one Write, with the characters of
// [Is] escaped. In front of a JSON log it keeps every line valid JSON of
// the same values: the characters can only be in its strings. It is safe
// for concurrent use when W is.
type Writer struct {
	W io.Writer
}

// Write writes Escape(p) to w.W and returns len(p) when that succeeded.
func (w Writer) Write(p []byte) (int, error) {
	q := Escape(p)
	n, err := w.W.Write(q)
	if err == nil {
		return len(p), nil
	}
	return min(n, len(p)), err
}
