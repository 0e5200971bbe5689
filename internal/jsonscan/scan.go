package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

// skipSpace returns the index of the first byte at or after data[i] that
// is not JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at data[i].
func skipString(data []byte, i int) int {
	end, _ := scanString(data, i)
	return end
}

// scanString returns the index just past the string starting at data[i],
// and whether it has an escape. Runs of eight bytes without a quote or a
// backslash are passed over a word at a time.
func scanString(data []byte, i int) (end int, escaped bool) {
	j := i + 1
	for {
		if j = toSpecial(data, j, quoteOrBackslash); j >= len(data) {
			return len(data), escaped
		}
		switch data[j] {
		case '"':
			return j + 1, escaped
		case '\\':
			escaped = true
			j += 2
		default:
			j++
		}
	}
}

// skipValue returns the index just past the value starting at data[i].
// Within an object or array, runs of eight bytes without a quote or a
// bracket are passed over a word at a time.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); {
			if j = toSpecial(data, j, structural); j >= len(data) {
				break
			}
			switch data[j] {
			case '"':
				j = skipString(data, j)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
		}
		return len(data)
	default: // a number or a literal
		j := i
		for j < len(data) {
			switch data[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j
			}
			j++
		}
		return j
	}
}

// toSpecial returns the index of the first byte at or after data[j] that
// special (zeros, or a union of them) finds in its word, passing over
// eight bytes at a time while it finds none; or, with fewer than eight
// bytes left, the index they start at, for the caller to read one by one.
func toSpecial(data []byte, j int, special func(w uint64) uint64) int {
	for j+8 <= len(data) {
		if m := special(binary.LittleEndian.Uint64(data[j:])); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	return j
}

// Bytes of a word: each 1, each with only its high bit set, each 0x20.
const (
	lowBits   = 0x0101010101010101
	highBits  = 0x8080808080808080
	caseBits  = 0x2020202020202020
	quoteBits = '"' * lowBits
)

// zeros returns a word whose lowest set bit is the high bit of the first
// (lowest) zero byte of w, and 0 when w has none. (Bits above it may be
// set for bytes that are not zero: only the lowest one is exact.)
func zeros(w uint64) uint64 { return (w - lowBits) &^ w & highBits }

// below is zeros for the bytes of w whose value is less than n (n <= 0x80).
func below(w uint64, n byte) uint64 { return (w - uint64(n)*lowBits) &^ w & highBits }

// quoteOrBackslash is zeros for the bytes of w that are '"' or '\\'.
func quoteOrBackslash(w uint64) uint64 {
	return zeros(w^quoteBits) | zeros(w^('\\'*lowBits))
}

// quoteBackslashOrControl is zeros for the bytes of w that are '"', '\\'
// or below 0x20.
func quoteBackslashOrControl(w uint64) uint64 { return quoteOrBackslash(w) | below(w, 0x20) }

// structural is zeros for the bytes of w that are '"', '{', '}', '[' or
// ']': with bit 0x20 set, '[' and ']' read as '{' and '}', which no other
// byte does but those.
func structural(w uint64) uint64 {
	c := w | caseBits
	return zeros(w^quoteBits) | zeros(c^('{'*lowBits)) | zeros(c^('}'*lowBits))
}
