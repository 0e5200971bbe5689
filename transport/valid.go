package transport

import "bytes"

// validJSON reports whether data is one valid JSON value, exactly as
// json.Valid does (the same grammar, bytes of 0x80 and above accepted in
// strings as they are, at most 10,000 nested arrays and objects), without
// encoding/json's byte-at-a-time state machine: a few times faster on the
// small messages of MCP.
func validJSON(data []byte) bool {
	v := validator{data: data}
	i, ok := v.value(v.space(0), 0)
	return ok && v.space(i) == len(data)
}

// validMembers is validJSON, and, into m, the top-level members of data
// when it is an object, in one pass: they are taken as their values are
// checked (a name written with escapes decoded, the last of a repeated
// member winning); isObject is false for another value. When ps is not
// nil and the member params is an object, ps gets its members (as
// splitParams finds them), and those of its _meta when that is an object
// of at most maxHeldMeta members; ps's state says whether it holds
// params' members.
func validMembers(data []byte, m *members, ps *paramsSplit) (valid, isObject bool) {
	v := validator{data: data, top: m, params: ps, paramsAt: -1, metaAt: -1}
	start := v.space(0)
	i, ok := v.value(start, 0)
	valid = ok && v.space(i) == len(data)
	isObject = valid && data[start] == '{'
	if ps != nil {
		// What was taken is of the last params and _meta, which may have
		// been followed by others that are not objects.
		if !isObject || m.params == nil || v.offset(m.params) != v.paramsAt {
			*ps = paramsSplit{}
		} else if ps.meta.held && (ps.members.Meta == nil || v.offset(ps.members.Meta) != v.metaAt) {
			ps.meta = metaSplit{}
		}
	}
	return valid, isObject
}

// ValidJSON reports whether data is one valid JSON value, as json.Valid
// does, faster.
func ValidJSON(data []byte) bool { return validJSON(data) }

// maxNesting is encoding/json's limit on nested arrays and objects.
const maxNesting = 10000

type validator struct {
	data []byte
	top  *members // when not nil, filled with the members of a top-level object

	// When not nil, filled with the members of the top-level member
	// params and of its _meta (see validMembers), whose '{' are at
	// data[paramsAt] and data[metaAt] (-1: none yet).
	params           *paramsSplit
	paramsAt, metaAt int
}

// offset returns the index in v.data at which b, a sub-slice of it that
// runs to its end of capacity, starts.
func (v *validator) offset(b []byte) int { return cap(v.data) - cap(b) }

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

// object checks an object whose '{' is just before data[i].
func (v *validator) object(i, depth int) (int, bool) {
	if depth > maxNesting {
		return i, false
	}
	// Whose members are taken: the top-level object's, params', or its
	// _meta's ('{' is at i-1). An empty one is taken too.
	role := roleNone
	switch {
	case depth == 1 && v.top != nil:
		role = roleTop
	case v.params == nil:
	case depth == 2 && i-1 == v.paramsAt:
		role = roleParams
		v.params.members, v.params.state = ParamMembers{}, splitObject
	case depth == 3 && i-1 == v.metaAt:
		role = roleMeta
		v.params.meta = metaSplit{held: true}
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
		if role != roleNone {
			raw := d[keyStart:keyEnd]
			key = memberName(raw, bytes.IndexByte(raw, '\\') >= 0)
			if valStart < len(d) && d[valStart] == '{' && v.params != nil {
				switch {
				case role == roleTop && string(key) == "params":
					v.paramsAt = valStart
				case role == roleParams && string(key) == "_meta":
					v.metaAt = valStart
				}
			}
		}
		if i, ok = v.value(valStart, depth); !ok {
			return i, false
		}
		switch role {
		case roleTop:
			v.top.setDecoded(key, d[valStart:i])
		case roleParams:
			v.params.members.set(key, d[valStart:i])
		case roleMeta:
			v.params.meta.add(key, d[valStart:i])
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

// The objects whose members a validator takes.
const (
	roleNone   = iota
	roleTop    // the message
	roleParams // its params
	roleMeta   // params._meta
)

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

// quoteBackslashOrControl is zeros for the bytes of w that are '"', '\\'
// or below 0x20.
func quoteBackslashOrControl(w uint64) uint64 { return quoteOrBackslash(w) | below(w, 0x20) }

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
