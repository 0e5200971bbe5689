package jsonscan

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
	"unsafe"
)

// DecodeString decodes a raw JSON string value; ok is false for anything
// else (null included).
func DecodeString(raw []byte) (string, bool) {
	if b, ok := plainString(raw); ok {
		return string(b), true
	}
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// DecodeStringInPlace is DecodeString for raw bytes that never change
// afterwards, such as a request's own arguments: a string without escapes
// shares raw's bytes instead of copying them (and keeps them reachable
// while it is), so a large argument costs no second copy.
func DecodeStringInPlace(raw []byte) (string, bool) {
	if b, ok := plainString(raw); ok {
		return unsafe.String(unsafe.SliceData(b), len(b)), true
	}
	return DecodeString(raw)
}

// plainString returns the bytes between the quotes of raw, a JSON string
// value without escapes, which are its value; ok is false for anything
// else.
func plainString(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || bytes.IndexByte(raw, '\\') >= 0 {
		return nil, false
	}
	return raw[1 : len(raw)-1], true
}

const hexDigits = "0123456789abcdef"

// AppendString appends s to b as a JSON string, for encoders that build
// JSON by hand: '"', '\\' and the control characters escaped, invalid
// UTF-8 written as U+FFFD. [StringSize] is the length it appends.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// StringSize returns len(AppendString(nil, s)), counted without encoding.
func StringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 0x20 && c != '"' && c != '\\':
				n++
			case c == '"', c == '\\', c == '\n', c == '\r', c == '\t':
				n += 2
			default:
				n += 6 // \u00XX
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += 6 // \ufffd
		} else {
			n += size
		}
		i += size
	}
	return n
}
