package server

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vigil-mcp/vigil/internal/jsonscan"
)

// argsPlan is the fast path of argument validation, for the input schemas
// most tools declare: an object whose named members have simple types
// (with bounds, lengths, string enums), some required, others refused. It
// reads the arguments' bytes as they are: no decoding into values, no
// allocation, no recursion, so that a valid call costs a scan of its
// arguments and fits in the stack of the goroutine that serves it (see
// cmd/vigil's TestRequestFitsTheStartingStack), which the validator's
// (schema_validator.go), recursive, does not.
//
// It only vouches: accepts reports true only for arguments the schema's
// validator accepts too, and false for everything else,
// valid or not, that it cannot tell (escapes in a string it must compare,
// a fraction written for an integer, ...). False sends the arguments to
// that validation, which has the last word and words the error.
type argsPlan struct {
	props    []propPlan
	required uint64 // bit i: props[i] is required
	closed   bool   // additionalProperties false: other members are refused
}

// propPlan checks one member's value.
type propPlan struct {
	name             string
	kind             jsonKind // kindAny: any value
	minimum, maximum float64  // bounds, inclusive or not; ±Inf when absent
	exclMin, exclMax bool
	numeric          bool // some bound is set
	minLen, maxLen   int  // in runes; maxLen -1 when absent
	enum             []string
	text             bool // minLen, maxLen or enum is set
}

// jsonKind is the JSON type of a value as the plan tells it from its first
// bytes; kindInteger is a number written without fraction or exponent.
type jsonKind uint8

const (
	kindAny jsonKind = iota
	kindNull
	kindBoolean
	kindObject
	kindArray
	kindString
	kindNumber
	kindInteger
)

// kindOfType returns the kind a "type" keyword names; ok is false for a
// name that is not a JSON Schema type.
func kindOfType(t string) (k jsonKind, ok bool) {
	switch t {
	case "null":
		return kindNull, true
	case "boolean":
		return kindBoolean, true
	case "object":
		return kindObject, true
	case "array":
		return kindArray, true
	case "string":
		return kindString, true
	case "number":
		return kindNumber, true
	case "integer":
		return kindInteger, true
	}
	return kindAny, false
}

// annotation reports whether a keyword constrains nothing: an annotation,
// or an extension such as MCP's x-mcp-header, which validation ignores.
func annotation(keyword string) bool {
	switch keyword {
	case "$schema", "$id", "$comment", "title", "description", "examples", "default", "deprecated", "readOnly", "writeOnly":
		return true
	}
	return strings.HasPrefix(keyword, "x-")
}

// planArgs makes the plan of an object schema, given as JSON (its compiled
// form), or returns nil when the schema uses anything beyond the plan's
// subset: then every call goes to the validator.
func planArgs(raw json.RawMessage) *argsPlan {
	var root map[string]json.RawMessage
	if json.Unmarshal(raw, &root) != nil {
		return nil
	}
	p := &argsPlan{}
	var props map[string]json.RawMessage
	var required []string
	for k, v := range root {
		var err error
		switch k {
		case "type":
			if string(v) != `"object"` {
				return nil
			}
		case "properties":
			err = json.Unmarshal(v, &props)
		case "required":
			err = json.Unmarshal(v, &required)
		case "additionalProperties":
			switch string(v) {
			case "false":
				p.closed = true
			case "true":
			default:
				return nil
			}
		default:
			if !annotation(k) {
				return nil
			}
		}
		if err != nil {
			return nil
		}
	}
	if len(props) > 64 {
		return nil
	}
	for name, v := range props {
		pp, ok := planProp(name, v)
		if !ok {
			return nil
		}
		p.props = append(p.props, pp)
	}
	slices.SortFunc(p.props, func(a, b propPlan) int { return strings.Compare(a.name, b.name) })
	for _, name := range required {
		i := p.index([]byte(name))
		if i < 0 {
			return nil // required but not described: rare, left to the validator
		}
		p.required |= 1 << i
	}
	return p
}

// planProp makes the check of one property's schema; ok is false when it
// uses anything beyond the subset.
func planProp(name string, raw json.RawMessage) (pp propPlan, ok bool) {
	pp = propPlan{name: name, minimum: math.Inf(-1), maximum: math.Inf(1), maxLen: -1}
	if string(raw) == "true" { // {} as jsonschema-go writes it: any value
		return pp, true
	}
	var s map[string]json.RawMessage
	if json.Unmarshal(raw, &s) != nil {
		return pp, false
	}
	for k, v := range s {
		var err error
		switch k {
		case "type":
			var t string
			if err = json.Unmarshal(v, &t); err == nil {
				if pp.kind, ok = kindOfType(t); !ok {
					return pp, false
				}
			}
		case "minimum", "exclusiveMinimum":
			err = json.Unmarshal(v, &pp.minimum)
			pp.exclMin, pp.numeric = k == "exclusiveMinimum", true
		case "maximum", "exclusiveMaximum":
			err = json.Unmarshal(v, &pp.maximum)
			pp.exclMax, pp.numeric = k == "exclusiveMaximum", true
		case "minLength":
			err = json.Unmarshal(v, &pp.minLen)
			pp.text = true
		case "maxLength":
			err = json.Unmarshal(v, &pp.maxLen)
			pp.text = true
		case "enum":
			if err = json.Unmarshal(v, &pp.enum); pp.enum == nil {
				return pp, false
			}
			pp.text = true
		default:
			if !annotation(k) {
				return pp, false
			}
		}
		if err != nil {
			return pp, false
		}
	}
	_, both := s["minimum"]
	_, excl := s["exclusiveMinimum"]
	_, both2 := s["maximum"]
	_, excl2 := s["exclusiveMaximum"]
	switch {
	case both && excl, both2 && excl2: // two lower (or upper) bounds
		return pp, false
	case pp.numeric && pp.kind != kindNumber && pp.kind != kindInteger:
		return pp, false
	case pp.text && pp.kind != kindString:
		return pp, false
	}
	return pp, true
}

// index returns the index of the property named key, or -1.
func (p *argsPlan) index(key []byte) int {
	for i := range p.props {
		if p.props[i].name == string(key) {
			return i
		}
	}
	return -1
}

// accepts reports whether the plan vouches that data, a tool call's
// arguments, match the schema.
func (p *argsPlan) accepts(data []byte) bool {
	if !jsonscan.Valid(data) || !numbersFit(data) {
		return false
	}
	var seen uint64
	ok := true
	isObject := jsonscan.EachMember(data, func(key, val []byte) {
		if !ok {
			return
		}
		i := p.index(key)
		if i < 0 {
			// Decoding makes U+FFFD of invalid UTF-8: such a name might
			// be a property's.
			ok = !p.closed && utf8.Valid(key)
			return
		}
		seen |= 1 << i
		ok = p.props[i].accepts(val)
	})
	return isObject && ok && seen&p.required == p.required
}

// accepts reports whether the check vouches for val, a valid JSON value.
func (pp *propPlan) accepts(val []byte) bool {
	if len(val) == 0 {
		return false
	}
	var kind jsonKind
	switch val[0] {
	case 'n':
		kind = kindNull
	case 't', 'f':
		kind = kindBoolean
	case '{':
		kind = kindObject
	case '[':
		kind = kindArray
	case '"':
		kind = kindString
	default:
		kind = kindNumber
		if !bytes.ContainsAny(val, ".eE") {
			kind = kindInteger
		}
	}
	switch {
	case pp.kind == kindAny, pp.kind == kind, pp.kind == kindNumber && kind == kindInteger:
	default:
		return false
	}
	if pp.numeric && (kind == kindNumber || kind == kindInteger) {
		f, err := strconv.ParseFloat(string(val), 64)
		if err != nil ||
			pp.exclMin && f <= pp.minimum || f < pp.minimum ||
			pp.exclMax && f >= pp.maximum || f > pp.maximum {
			return false
		}
	}
	if pp.text && kind == kindString {
		s := val[1 : len(val)-1]
		if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
			return false
		}
		if n := utf8.RuneCount(s); n < pp.minLen || pp.maxLen >= 0 && n > pp.maxLen {
			return false
		}
		if pp.enum != nil && !slices.ContainsFunc(pp.enum, func(e string) bool { return e == string(s) }) {
			return false
		}
	}
	return true
}

// numbersFit reports whether every number in data, valid JSON, surely
// fits a float64, which decoding into values (as the validator
// needs) requires of every number, anywhere: at most 200
// digits and an exponent of at most two, so within 1e±300.
func numbersFit(data []byte) bool {
	for i := 0; i < len(data); {
		switch c := data[i]; {
		case c == '"':
			for i++; ; i++ { // to the closing quote: one not escaped
				q := bytes.IndexByte(data[i:], '"')
				if q < 0 {
					return false
				}
				i += q
				n := 0
				for n < i && data[i-1-n] == '\\' {
					n++
				}
				if n%2 == 0 {
					break
				}
			}
			i++
		case c == '-' || c >= '0' && c <= '9':
			digits, expDigits, exp := 0, 0, false
		number:
			for ; i < len(data); i++ {
				switch c := data[i]; {
				case c >= '0' && c <= '9' && exp:
					expDigits++
				case c >= '0' && c <= '9':
					digits++
				case c == 'e' || c == 'E':
					exp = true
				case c == '.' || c == '-' || c == '+':
				default:
					break number
				}
			}
			if digits > 200 || expDigits > 2 {
				return false
			}
		default:
			i++
		}
	}
	return true
}
