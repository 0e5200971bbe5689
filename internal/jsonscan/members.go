package jsonscan

import "encoding/json"

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
// as a request's params), without allocating beyond the result: values[i]
// is the raw value of keys[i], nil when absent. Names are matched exactly;
// for a repeated member the last one wins. ok is false when data is not an
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
