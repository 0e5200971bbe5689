// Package paramheader checks the Mcp-Param-* headers of a 2026-07-28
// tools/call (SEP-2243) against the arguments they mirror. The Streamable
// HTTP transport puts a request's headers on the context it serves the
// request with ([NewContext]); the server, which knows the tools' input
// schemas, checks them at admission ([Check]).
package paramheader

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

type headerKey struct{}

// NewContext returns ctx carrying the HTTP headers of the request it
// serves.
func NewContext(ctx context.Context, h http.Header) context.Context {
	return context.WithValue(ctx, headerKey{}, h)
}

// FromContext returns the headers NewContext put on ctx, if any.
func FromContext(ctx context.Context) (http.Header, bool) {
	h, ok := ctx.Value(headerKey{}).(http.Header)
	return h, ok
}

// Check compares each Mcp-Param-<Name> header with the tools/call argument
// it mirrors, for every property of the tool's input schema that carries
// "x-mcp-header"; it returns why they disagree, or "". An argument that is
// absent or null has no header to check.
func Check(h http.Header, inputSchema json.RawMessage, arguments json.RawMessage) string {
	var schema struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if json.Unmarshal(inputSchema, &schema) != nil {
		return ""
	}
	var args map[string]json.RawMessage
	if len(arguments) > 0 && json.Unmarshal(arguments, &args) != nil {
		return ""
	}
	for arg, prop := range schema.Properties {
		if prop.Header == "" {
			continue
		}
		want, present := valueOf(args[arg])
		if !present {
			continue
		}
		name := "Mcp-Param-" + prop.Header
		values, ok := h[http.CanonicalHeaderKey(name)]
		if !ok || len(values) == 0 {
			return "missing " + name + " header for argument " + strconv.Quote(arg)
		}
		got, ok := decode(strings.TrimSpace(values[0]))
		if !ok {
			return name + " header is not valid: bad base64 encoding"
		}
		if got != want {
			return name + " header does not match argument " + strconv.Quote(arg)
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
