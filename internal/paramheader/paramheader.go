package paramheader

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

type headerKey struct{}

// Carrier is a context that carries the HTTP headers Header of the
// request it serves beside everything of its Context (values, deadline,
// cancellation). It is a value, for a transport to hold in a struct it
// allocates anyway and hand out by pointer: carrying the headers then costs
// no allocation of its own.
type Carrier struct {
	context.Context
	Header http.Header
}

// Value returns the headers for HeaderFromContext, and c.Context's values
// otherwise.
func (c *Carrier) Value(key any) any {
	if key == (headerKey{}) {
		return c.Header
	}
	return c.Context.Value(key)
}

// HeaderFromContext returns the headers of the Carrier ctx is or derives
// from, if any.
func HeaderFromContext(ctx context.Context) (http.Header, bool) {
	h, ok := ctx.Value(headerKey{}).(http.Header)
	return h, ok
}

// Mirror is one argument of a tool that a Mcp-Param-* header mirrors.
type Mirror struct {
	Arg    string // the argument's name
	Header string // the full header name, "Mcp-Param-" + the x-mcp-header value
	key    string // Header in canonical form, the key of http.Header
}

// Mirrors lists, sorted by argument name, the properties of an input
// schema that carry "x-mcp-header": what [Check] checks. A server
// computes them once per tool. It returns nil for a schema without any,
// or one that is not valid.
func Mirrors(inputSchema json.RawMessage) []Mirror {
	var schema struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if json.Unmarshal(inputSchema, &schema) != nil {
		return nil
	}
	var out []Mirror
	for arg, prop := range schema.Properties {
		if prop.Header != "" {
			name := "Mcp-Param-" + prop.Header
			out = append(out, Mirror{Arg: arg, Header: name, key: http.CanonicalHeaderKey(name)})
		}
	}
	slices.SortFunc(out, func(a, b Mirror) int { return strings.Compare(a.Arg, b.Arg) })
	return out
}

// Check compares each Mcp-Param-<Name> header with the tools/call argument
// it mirrors, for each of the tool's mirrors (see [Mirrors]); it returns
// why they disagree, or "". An argument that is absent or null has no
// header to check.
func Check(h http.Header, mirrors []Mirror, arguments json.RawMessage) string {
	if len(mirrors) == 0 {
		return ""
	}
	var args map[string]json.RawMessage
	if len(arguments) > 0 && json.Unmarshal(arguments, &args) != nil {
		return ""
	}
	for _, m := range mirrors {
		want, present := valueOf(args[m.Arg])
		if !present {
			continue
		}
		name := m.Header
		values, ok := h[m.key]
		if !ok || len(values) == 0 {
			return "missing " + name + " header for argument " + strconv.Quote(m.Arg)
		}
		got, ok := decode(strings.TrimSpace(values[0]))
		if !ok {
			return name + " header is not valid: bad base64 encoding"
		}
		if got != want {
			return name + " header does not match argument " + strconv.Quote(m.Arg)
		}
	}
	return ""
}

// valueOf renders an argument as its header mirrors it: strings as they
// are, integers and booleans as JSON text. Absent and null arguments have
// no header.
func valueOf(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	return string(raw), true
}

// decode decodes "=?base64?<standard base64>?=" strictly, and returns any
// other value as a literal.
func decode(v string) (string, bool) {
	inner, ok := strings.CutPrefix(v, "=?base64?")
	if !ok {
		return v, true
	}
	inner, ok = strings.CutSuffix(inner, "?=")
	if !ok {
		return v, true // not the encoded form: a literal
	}
	b, err := base64.StdEncoding.Strict().DecodeString(inner)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

// Set sets on h, for each of a tool's mirrors (see [Mirrors]), the
// Mcp-Param-* header of its argument in arguments, as a client sends it:
// the value as it is when it is printable ASCII without surrounding
// space, else "=?base64?<standard base64>?=". An argument that is absent
// or null gets no header.
func Set(h http.Header, mirrors []Mirror, arguments json.RawMessage) {
	if len(mirrors) == 0 {
		return
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(arguments, &args) != nil {
		return
	}
	for _, m := range mirrors {
		v, present := valueOf(args[m.Arg])
		if !present {
			continue
		}
		if !literal(v) {
			v = "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		}
		h[m.key] = []string{v}
	}
}

// literal reports whether v travels in a header as it is: printable
// ASCII, without surrounding space, and not read as the encoded form.
func literal(v string) bool {
	if v == "" || v[0] == ' ' || v[len(v)-1] == ' ' || strings.HasPrefix(v, "=?base64?") {
		return false
	}
	for i := range len(v) {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}
