package jsonscan

import "bytes"

// Valid reports whether data is one valid JSON value, exactly as
// json.Valid does: the same grammar, bytes of 0x80 and above accepted in
// strings as they are, at most 10,000 nested arrays and objects.
func Valid(data []byte) bool {
	v := validator{data: data}
	i, ok := v.value(v.space(0), 0)
	return ok && v.space(i) == len(data)
}

// A Taker takes the members of the objects [ValidTaking] checks: the
// top-level object, level 0, and at level n+1 the object that is the value
// of the member path[n] of the object taken at level n.
type Taker interface {
	// Object says that an object of level starts: what an earlier one of
	// that level gave (a repeated member's) is to be forgotten.
	Object(level int)
	// Member gives a member of the object of level, once its value is
	// checked (the members of an object taken below it come first), in
	// order: its name, decoded when written with escapes, and its raw
	// value, sub-slices of the data checked (the name a copy when decoded).
	Member(level int, key, val []byte)
}

// MaxPath is the longest path [ValidTaking] follows.
const MaxPath = 3

// ValidTaking is [Valid], and, in the same pass, hands t the members of the
// top-level value when it is an object (level 0) and of the objects nested
// in it along path, at most [MaxPath] member names (see [Taker]). taken is
// how many levels t holds the members of as they stand: 0 when data is not
// a valid object; else 1 plus the number of levels, down path, whose
// object is the value of the last member of its name (a member repeated
// after it, or a value that is not an object, leaves that level and those
// below it untaken, whatever t was given).
func ValidTaking(data []byte, t Taker, path ...string) (valid bool, taken int) {
	if len(path) > MaxPath {
		panic("jsonscan: a path longer than MaxPath")
	}
	v := validator{data: data, taker: t, pathLen: len(path)}
	copy(v.path[:], path) // not path itself, which would then escape
	for l := range v.at {
		v.at[l], v.entered[l] = -1, -1
	}
	start := v.space(0)
	i, ok := v.value(start, 0)
	if !ok || v.space(i) != len(data) {
		return false, 0
	}
	if data[start] != '{' {
		return true, 0
	}
	taken = 1
	for l := 1; l <= v.pathLen && v.at[l] >= 0 && v.at[l] == v.entered[l]; l++ {
		taken++
	}
	return true, taken
}

// maxNesting is encoding/json's limit on nested arrays and objects.
const maxNesting = 10000

type validator struct {
	data []byte

	// When taker is not nil, it is given the members of the objects along
	// path[:pathLen]: at[l] is the index of the value of the last member
	// path[l-1] of the object of level l-1, and entered[l] that of the '{'
	// of the last object of level l (-1: none).
	taker       Taker
	path        [MaxPath]string
	pathLen     int
	at, entered [MaxPath + 1]int
}

func (v *validator) space(i int) int {
	for i < len(v.data) {
		switch v.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value checks the value at data[i], at nesting depth, and returns the
// index just past it.
func (v *validator) value(i, depth int) (int, bool) {
	d := v.data
	if i >= len(d) {
		return i, false
	}
	switch c := d[i]; {
	case c == '{':
		return v.object(i+1, depth+1)
	case c == '[':
		return v.array(i+1, depth+1)
	case c == '"':
		return v.str(i + 1)
	case c == '-' || ('0' <= c && c <= '9'):
		return v.number(i)
	case c == 't':
		return v.literal(i, "true")
	case c == 'f':
		return v.literal(i, "false")
	case c == 'n':
		return v.literal(i, "null")
	}
	return i, false
}

func (v *validator) literal(i int, lit string) (int, bool) {
	if len(v.data)-i < len(lit) || string(v.data[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// level returns the level of the object whose '{' is at data[i], at
// nesting depth, when its members are taken, and -1 when they are not.
func (v *validator) level(i, depth int) int {
	switch l := depth - 1; {
	case v.taker == nil:
		return -1
	case l == 0:
		return 0
	case l <= v.pathLen && i == v.at[l]:
		return l
	}
	return -1
}

// object checks an object whose '{' is just before data[i].
func (v *validator) object(i, depth int) (int, bool) {
	if depth > maxNesting {
		return i, false
	}
	level := v.level(i-1, depth)
	if level >= 0 {
		v.entered[level] = i - 1
		if level < v.pathLen {
			v.at[level+1] = -1
		}
		v.taker.Object(level)
	}
	d := v.data
	i = v.space(i)
	if i < len(d) && d[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(d) || d[i] != '"' {
			return i, false
		}
		keyStart := i
		var ok bool
		if i, ok = v.str(i + 1); !ok {
			return i, false
		}
		keyEnd := i
		i = v.space(i)
		if i >= len(d) || d[i] != ':' {
			return i, false
		}
		valStart := v.space(i + 1)
		var key []byte
		if level >= 0 {
			raw := d[keyStart:keyEnd]
			key = memberName(raw, bytes.IndexByte(raw, '\\') >= 0)
			if level < v.pathLen && string(key) == v.path[level] {
				v.at[level+1] = valStart
			}
		}
		if i, ok = v.value(valStart, depth); !ok {
			return i, false
		}
		if level >= 0 {
			v.taker.Member(level, key, d[valStart:i])
		}
		i = v.space(i)
		if i >= len(d) {
			return i, false
		}
		switch d[i] {
		case '}':
			return i + 1, true
		case ',':
			i = v.space(i + 1)
		default:
			return i, false
		}
	}
}

// array checks an array whose '[' is just before data[i].
func (v *validator) array(i, depth int) (int, bool) {
	if depth > maxNesting {
		return i, false
	}
	d := v.data
	i = v.space(i)
	if i < len(d) && d[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = v.value(i, depth); !ok {
			return i, false
		}
		i = v.space(i)
		if i >= len(d) {
			return i, false
		}
		switch d[i] {
		case ']':
			return i + 1, true
		case ',':
			i = v.space(i + 1)
		default:
			return i, false
		}
	}
}

// str checks a string whose opening quote is just before data[i].
func (v *validator) str(i int) (int, bool) {
	d := v.data
	for i < len(d) {
		// To the first quote, backslash or control character.
		if i = toSpecial(d, i, quoteBackslashOrControl); i >= len(d) {
			break
		}
		c := d[i]
		switch {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(d) {
				return i, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(d)-i < 6 || !isHex(d[i+2]) || !isHex(d[i+3]) || !isHex(d[i+4]) || !isHex(d[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default:
			i++
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// number checks a number that starts at data[i].
func (v *validator) number(i int) (int, bool) {
	d := v.data
	if d[i] == '-' {
		i++
	}
	switch {
	case i >= len(d):
		return i, false
	case d[i] == '0':
		i++
	case '1' <= d[i] && d[i] <= '9':
		i = digits(d, i+1)
	default:
		return i, false
	}
	if i < len(d) && d[i] == '.' {
		j := digits(d, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := digits(d, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(d []byte, i int) int {
	for i < len(d) && '0' <= d[i] && d[i] <= '9' {
		i++
	}
	return i
}
