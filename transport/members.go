package transport

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
)

// members holds the raw values of a JSON-RPC message's top-level members,
// as sub-slices of the frame. A nil field means the member is absent.
type members struct {
	jsonrpc, id, method, params, result, error []byte
}

// memberName returns the name a JSON string, quotes included, holds:
// decoded when escaped says it is written with escapes, else the bytes
// between the quotes.
func memberName(raw []byte, escaped bool) []byte {
	if escaped {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return []byte(s)
		}
	}
	return raw[1 : len(raw)-1]
}

// setDecoded takes val for the member named key, if it is one of m's.
func (m *members) setDecoded(key, val []byte) {
	switch string(key) { // no allocation: the compiler compares in place
	case "jsonrpc":
		m.jsonrpc = val
	case "id":
		m.id = val
	case "method":
		m.method = val
	case "params":
		m.params = val
	case "result":
		m.result = val
	case "error":
		m.error = val
	}
}

// firstMember returns the index of the first member of the JSON object
// data, or -1 when the object is empty; ok is false when data is not an
// object.
func firstMember(data []byte) (i int, ok bool) {
	i = skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return -1, false
	}
	i = skipSpace(data, i+1)
	if i >= len(data) || data[i] == '}' {
		return -1, true
	}
	return i, true
}

// nextMember reads the member that starts at data[i]: its name (decoded
// when written with escapes), its raw value, and the index of the member
// after it, or -1 when it is the last.
func nextMember(data []byte, i int) (key, val []byte, next int) {
	keyEnd, escaped := scanString(data, i)
	key = memberName(data[i:keyEnd], escaped)
	i = skipSpace(data, keyEnd)
	i = skipSpace(data, i+1) // the colon
	valEnd := skipValue(data, i)
	val = data[i:valEnd]
	i = skipSpace(data, valEnd)
	if i >= len(data) || data[i] == '}' {
		return key, val, -1
	}
	if i = skipSpace(data, i+1); i >= len(data) { // the comma
		return key, val, -1
	}
	return key, val, i
}

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

// structural is zeros for the bytes of w that are '"', '{', '}', '[' or
// ']': with bit 0x20 set, '[' and ']' read as '{' and '}', which no other
// byte does but those.
func structural(w uint64) uint64 {
	c := w | caseBits
	return zeros(w^quoteBits) | zeros(c^('{'*lowBits)) | zeros(c^('}'*lowBits))
}

// EachMember calls f with the name and raw value of each member of the
// JSON object data, which is known to be valid JSON, in order, without
// allocating (unless a name is written with escapes, which is decoded).
// Repeated members are all passed. ok is false when data is not an object.
func EachMember(data []byte, f func(key, val []byte)) (ok bool) {
	i, ok := firstMember(data)
	for ok && i >= 0 {
		var key, val []byte
		key, val, i = nextMember(data, i)
		f(key, val)
	}
	return ok
}

// SplitObject returns the raw values of the named members of a JSON object
// that is known to be valid JSON (a sub-slice of a decoded message, such
// as Params), without allocating beyond the result: values[i] is the raw
// value of keys[i], nil when absent. Names are matched exactly; for a
// repeated member the last one wins. ok is false when data is not an
// object.
func SplitObject(data []byte, keys ...string) (values [][]byte, ok bool) {
	values = make([][]byte, len(keys))
	return values, SplitObjectInto(values, data, keys...)
}

// SplitObjectInto is SplitObject writing into values, which must be as long
// as keys (an array on the caller's stack, say): it allocates nothing.
func SplitObjectInto(values [][]byte, data []byte, keys ...string) (ok bool) {
	values = values[:len(keys)]
	clear(values)
	i, ok := firstMember(data)
	for ok && i >= 0 {
		var key, val []byte
		key, val, i = nextMember(data, i)
		for k, want := range keys {
			if string(key) == want {
				values[k] = val
			}
		}
	}
	return ok
}

// DecodeString decodes a raw JSON string value; ok is false for anything
// else (null included).
func DecodeString(raw []byte) (string, bool) { return decodeString(raw) }
