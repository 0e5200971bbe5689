package openapi

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Bounds of the schemas Load builds: a $ref is inlined at most maxRefDepth
// deep, and only while the schema has fewer than maxNodes schema objects
// (each tool's schemas, and so a description's memory, stay bounded: the
// big published descriptions refer to their shared schemas thousands of
// times); a schema nests at most maxDepth deep. A $ref past a bound, or
// one that refers to a schema it is already inside (a recursive type),
// becomes an unconstrained schema whose description names it.
const (
	maxRefDepth = 8
	maxNodes    = 250
	maxDepth    = 64
)

// An operation is what a call needs of one operation.
type operation struct {
	tool    Tool
	method  string
	path    string // the template, "/pets/{petId}"
	params  []param
	body    string // the property of the JSON body, "" when none
	media   string // the body's media type, application/json or another JSON one
	wrapped bool   // the output schema wraps the response as "result"
}

// A param is one parameter of an operation.
type param struct {
	name     string
	in       string // path, query, header, cookie
	prop     string // its property in the input schema
	required bool
	explode  bool // query arrays as repeated keys, not joined by commas
}

// forbiddenHeaders are the headers no parameter may set: hop-by-hop ones,
// and those that carry credentials or the connection's identity, which are
// the operator's.
var forbiddenHeaders = []string{
	"Authorization", "Proxy-Authorization", "Cookie", "Host", "Content-Length",
	"Connection", "Keep-Alive", "Transfer-Encoding", "Te", "Trailer", "Upgrade",
}

// forbiddenHeader reports whether a parameter may not set header name.
func forbiddenHeader(name string) bool {
	for _, h := range forbiddenHeaders {
		if strings.EqualFold(name, h) {
			return true
		}
	}
	return len(name) >= 6 && strings.EqualFold(name[:6], "Proxy-")
}

// A resolver builds JSON Schema 2020-12 from the description's schemas.
type resolver struct {
	doc   any  // the whole description, decoded, for $refs
	v30   bool // OpenAPI 3.0: nullable and boolean exclusive bounds
	nodes int  // schema objects in the schema being built
}

// operation builds the tool and call plan of one operation; its name is
// the caller's to set.
func (r *resolver) operation(path, method string, item *openapi3.PathItem, op *openapi3.Operation) (*operation, error) {
	o := &operation{method: method, path: path}
	o.tool.Title = op.Summary
	o.tool.Description = op.Description
	if o.tool.Description == "" {
		o.tool.Description = op.Summary
	}
	o.tool.ReadOnly = method == "GET" || method == "HEAD"
	o.tool.Idempotent = method == "PUT" || method == "DELETE"

	props := map[string]any{}
	var required []string
	seen := map[string]bool{}
	// Operation parameters override path-item ones of the same name and location.
	var all openapi3.Parameters
	for _, p := range op.Parameters {
		if p.Value != nil {
			all = append(all, p)
			seen[p.Value.In+"\x00"+p.Value.Name] = true
		}
	}
	for _, p := range item.Parameters {
		if p.Value != nil && !seen[p.Value.In+"\x00"+p.Value.Name] {
			all = append(all, p)
		}
	}
	for _, pr := range all {
		p := pr.Value
		if p.In == openapi3.ParameterInHeader && forbiddenHeader(p.Name) {
			continue // the operator's to set, never an argument's
		}
		if p.In != "path" && p.In != "query" && p.In != "header" && p.In != "cookie" {
			continue
		}
		s, err := r.parameterSchema(p)
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", p.Name, err)
		}
		if p.Description != "" {
			if m, ok := s.(map[string]any); ok {
				if _, has := m["description"]; !has {
					m["description"] = p.Description
				}
			}
		}
		prop := uniqueProp(props, p.Name, p.In)
		props[prop] = s
		req := p.Required || p.In == "path"
		if req {
			required = append(required, prop)
		}
		explode := p.Explode == nil || *p.Explode
		if p.Style != "" && p.Style != "form" {
			explode = false
		}
		o.params = append(o.params, param{name: p.Name, in: p.In, prop: prop, required: req, explode: explode})
	}
	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		if key, mt := jsonMedia(rb.Value.Content); mt != nil {
			o.media = key
			s, err := r.schema(mt.Schema)
			if err != nil {
				return nil, fmt.Errorf("request body: %w", err)
			}
			o.body = uniqueProp(props, "body", "")
			props[o.body] = s
			if rb.Value.Required {
				required = append(required, o.body)
			}
		}
	}
	in := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		in["required"] = required
	}
	var err error
	if o.tool.InputSchema, err = jsonText(in); err != nil {
		return nil, err
	}
	if mt := successMedia(op.Responses); mt != nil && mt.Schema != nil {
		s, err := r.schema(mt.Schema)
		if err != nil {
			return nil, fmt.Errorf("response: %w", err)
		}
		if m, ok := s.(map[string]any); !ok || m["type"] != "object" {
			s = map[string]any{"type": "object", "properties": map[string]any{"result": s}, "required": []string{"result"}}
			o.wrapped = true
		}
		if o.tool.OutputSchema, err = jsonText(s); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// uniqueProp is name, or name suffixed with "_" and in (then "_2", …)
// when props has it already.
func uniqueProp(props map[string]any, name, in string) string {
	if _, taken := props[name]; !taken {
		return name
	}
	base := name + "_" + in
	p := base
	for i := 2; ; i++ {
		if _, taken := props[p]; !taken {
			return p
		}
		p = fmt.Sprintf("%s_%d", base, i)
	}
}

// parameterSchema is the schema of a parameter, from its schema or from
// the single entry of its content.
func (r *resolver) parameterSchema(p *openapi3.Parameter) (any, error) {
	if p.Schema != nil {
		return r.schema(p.Schema)
	}
	for _, mt := range p.Content {
		if mt != nil && mt.Schema != nil {
			return r.schema(mt.Schema)
		}
	}
	return map[string]any{}, nil
}

// jsonMedia returns the first JSON entry of content (application/json or a
// type ending in +json), by media type, and its key.
func jsonMedia(content openapi3.Content) (string, *openapi3.MediaType) {
	keys := make([]string, 0, len(content))
	for k := range content {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if isJSON(k) && content[k] != nil {
			return k, content[k]
		}
	}
	return "", nil
}

// isJSON reports whether a media type is JSON: application/json or a
// type ending in +json.
func isJSON(mediaType string) bool {
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// successMedia returns the JSON content of the first 2xx response (200,
// 201, … then 2XX) that has one.
func successMedia(rs *openapi3.Responses) *openapi3.MediaType {
	if rs == nil {
		return nil
	}
	codes := make([]string, 0, rs.Len())
	for code := range rs.Map() {
		if len(code) == 3 && code[0] == '2' {
			codes = append(codes, code)
		}
	}
	slices.SortFunc(codes, func(a, b string) int { return strings.Compare(strings.ToUpper(a), strings.ToUpper(b)) })
	for _, code := range codes {
		if resp := rs.Value(code); resp != nil && resp.Value != nil {
			if _, mt := jsonMedia(resp.Value.Content); mt != nil {
				return mt
			}
		}
	}
	return nil
}

// schema builds the JSON Schema 2020-12 of one of the description's
// schemas, its $refs inlined within the bounds.
func (r *resolver) schema(sr *openapi3.SchemaRef) (any, error) {
	if sr == nil {
		return map[string]any{}, nil
	}
	b, err := json.Marshal(sr)
	if err != nil {
		return nil, err
	}
	var v any
	if err := unmarshalNumbers(b, &v); err != nil {
		return nil, err
	}
	r.nodes = 0
	return r.convert(v, nil, 0), nil
}

// Keywords whose values are schemas: one, a list, or a map of them.
var (
	oneSchema  = []string{"additionalProperties", "not", "contains", "if", "then", "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems", "items"}
	listSchema = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	mapSchema  = []string{"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"}
)

// convert returns node, a decoded schema, as JSON Schema 2020-12: local
// $refs inlined (stack holds those being inlined), OpenAPI 3.0's nullable
// and boolean exclusive bounds rewritten, $id and $schema dropped.
func (r *resolver) convert(node any, stack []string, depth int) any {
	m, ok := node.(map[string]any)
	if !ok {
		return node // true, false, or not a schema
	}
	if depth > maxDepth {
		return map[string]any{"description": "not expanded: nested too deep"}
	}
	if ref, ok := m["$ref"].(string); ok {
		target, found := r.pointer(ref)
		switch {
		case !found:
			return map[string]any{"description": "not expanded: unresolved reference " + ref}
		case slices.Contains(stack, ref):
			return map[string]any{"description": "not expanded: recursive reference " + ref}
		case len(stack) >= maxRefDepth || r.nodes >= maxNodes:
			return map[string]any{"description": "not expanded: reference " + ref + " past the bound"}
		}
		out := r.convert(target, append(stack[:len(stack):len(stack)], ref), depth+1)
		if r.v30 || len(m) == 1 {
			return out
		}
		// OpenAPI 3.1: keywords beside $ref apply too.
		sib := make(map[string]any, len(m))
		for k, v := range m {
			if k != "$ref" {
				sib[k] = v
			}
		}
		return map[string]any{"allOf": []any{out, r.convert(sib, stack, depth+1)}}
	}
	r.nodes++
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch {
		case k == "$id" || k == "$schema" || k == "$anchor" || k == "$dynamicAnchor":
		case slices.Contains(oneSchema, k):
			if list, ok := v.([]any); ok && k == "items" { // draft-04 tuple form
				out["prefixItems"] = r.convertList(list, stack, depth)
				continue
			}
			out[k] = r.convert(v, stack, depth+1)
		case slices.Contains(listSchema, k):
			list, _ := v.([]any)
			out[k] = r.convertList(list, stack, depth)
		case slices.Contains(mapSchema, k):
			sub, _ := v.(map[string]any)
			conv := make(map[string]any, len(sub))
			for name, s := range sub {
				conv[name] = r.convert(s, stack, depth+1)
			}
			out[k] = conv
		default:
			out[k] = v
		}
	}
	if r.v30 {
		fix30(out)
	}
	return out
}

// convertList converts each schema of list.
func (r *resolver) convertList(list []any, stack []string, depth int) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = r.convert(s, stack, depth+1)
	}
	return out
}

// fix30 rewrites OpenAPI 3.0's keywords that JSON Schema 2020-12 spells
// otherwise: nullable adds "null" to the type, and a boolean
// exclusiveMinimum or exclusiveMaximum makes its bound exclusive.
func fix30(m map[string]any) {
	if n, ok := m["nullable"].(bool); ok {
		delete(m, "nullable")
		if t, ok := m["type"].(string); ok && n {
			m["type"] = []any{t, "null"}
		}
	}
	for _, b := range [][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		ex, ok := m[b[0]].(bool)
		if !ok {
			continue
		}
		delete(m, b[0])
		if bound, has := m[b[1]]; ex && has {
			m[b[0]] = bound
			delete(m, b[1])
		}
	}
}

// pointer resolves a local $ref ("#/components/schemas/Pet") in the
// description.
func (r *resolver) pointer(ref string) (any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, false
	}
	node := r.doc
	if frag == "" {
		return node, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case map[string]any:
			if node, ok = n[tok]; !ok {
				return nil, false
			}
		case []any:
			i := -1
			if _, err := fmt.Sscan(tok, &i); err != nil || i < 0 || i >= len(n) {
				return nil, false
			}
			node = n[i]
		default:
			return nil, false
		}
	}
	return node, true
}
