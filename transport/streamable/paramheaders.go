package streamable

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vigil-mcp/vigil/transport"
)

// ToolSchemas is implemented by a [Server] that can describe its tools;
// the handler then validates the Mcp-Param-* headers that mirror arguments
// whose schema property carries "x-mcp-header" (2026-07-28, SEP-2243). The
// server package's *Server implements it.
type ToolSchemas interface {
	ToolInputSchema(name string) (json.RawMessage, bool)
}

// checkParamHeaders compares each Mcp-Param-<Name> header with the argument
// it mirrors; it returns why they disagree, or "".
func (h *Handler) checkParamHeaders(r *http.Request, req *transport.Request) string {
	schemas, ok := h.srv.(ToolSchemas)
	if !ok || req.Method != "tools/call" {
		return ""
	}
	var p struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return ""
	}
	raw, ok := schemas.ToolInputSchema(p.Name)
	if !ok {
		return ""
	}
	var schema struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if json.Unmarshal(raw, &schema) != nil {
		return ""
	}
	for arg, prop := range schema.Properties {
		if prop.Header == "" {
			continue
		}
		want, present := headerValueOf(p.Arguments[arg])
		if !present {
			continue
		}
		name := "Mcp-Param-" + prop.Header
		values, ok := r.Header[http.CanonicalHeaderKey(name)]
		if !ok || len(values) == 0 {
			return "missing " + name + " header for argument " + strconv.Quote(arg)
		}
		got, ok := decodeParamHeader(strings.TrimSpace(values[0]))
		if !ok {
			return name + " header is not valid: bad base64 encoding"
		}
		if got != want {
			return name + " header does not match argument " + strconv.Quote(arg)
		}
	}
	return ""
}

// headerValueOf renders an argument as its header mirrors it: strings as
// they are, integers and booleans as JSON text. Absent and null arguments
// have no header.
func headerValueOf(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	return string(raw), true
}

// decodeParamHeader decodes "=?base64?<standard base64>?=" strictly, and
// returns any other value as a literal.
func decodeParamHeader(v string) (string, bool) {
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
