package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// A validator applies each subschema by a call of its own: a cycle of
// subschemas applied to the same value ($ref, allOf, not...) never ends
// (jsonschema-go's stack overflowed, fatal to the process; the validator
// now used finds the cycle, but only when a call reaches it). A schema is
// therefore mapped as a graph before it is accepted: an edge from a
// subschema to each one it applies, to the same value or (properties,
// items...) to a part of it. A cycle of same-value edges is refused; one
// through a descending edge makes the schema recursive, validated only as
// deep as maxValidatedNesting. References are followed as jsonschema-go's
// Resolve, which checks every schema first, follows them with no loader
// and no base URI (the server's only way); one the map cannot follow
// refuses the schema, so nothing it misses can recurse.

// schemaApplies says how a keyword applies its subschemas: to the same
// value, or to parts of it (descending); absent keywords hold none.
type schemaApplies uint8

const (
	notApplied schemaApplies = iota // holds subschemas only to be referred to ($defs)
	sameValue
	descending
)

// schemaShape is the shape of a keyword's value when it holds
// subschemas: one, an array of them, or an object of them.
type schemaShape uint8

const (
	noSchemas schemaShape = iota
	oneSchema
	schemaArray
	schemaObject
	oneSchemaOrArray // items: one, or an array in draft-07
)

// keywordSchemas says what subschemas the keyword kw holds, and how it
// applies them.
func keywordSchemas(kw string) (schemaShape, schemaApplies) {
	switch kw {
	case "not", "if", "then", "else":
		return oneSchema, sameValue
	case "allOf", "anyOf", "oneOf":
		return schemaArray, sameValue
	case "dependentSchemas", "dependencies": // values that are arrays are not schemas
		return schemaObject, sameValue
	case "additionalProperties", "propertyNames", "unevaluatedProperties", "additionalItems", "contains", "unevaluatedItems":
		return oneSchema, descending
	case "items":
		return oneSchemaOrArray, descending
	case "prefixItems":
		return schemaArray, descending
	case "properties", "patternProperties":
		return schemaObject, descending
	case "contentSchema":
		return oneSchema, notApplied
	case "$defs", "definitions":
		return schemaObject, notApplied
	}
	return noSchemas, notApplied
}

// schemaNode is a subschema of the graph: an object (a boolean schema
// applies nothing and refers to nothing, so it is no node).
type schemaNode struct {
	obj     map[string]any
	ptr     string      // its JSON Pointer from the root, as "#/..."
	base    *schemaNode // the innermost enclosing subschema with a URI of its own (itself when it has one)
	uri     *url.URL    // set on bases only
	anchors map[string]anchorNode
	edges   []schemaEdge
}

type anchorNode struct {
	node    *schemaNode
	dynamic bool
}

type schemaEdge struct {
	to      *schemaNode
	applies schemaApplies
	keyword string
}

// schemaGraph is a schema's graph of subschemas.
type schemaGraph struct {
	draft7 bool
	nodes  []*schemaNode
	byPtr  map[string]*schemaNode
	byURI  map[string]*schemaNode
}

// checkSchemaGraph maps raw, a schema that jsonschema-go resolved, and
// refuses it when validation against it could recurse without end. It
// reports whether the schema is recursive: whether validation descends
// as deep as the value nests.
func checkSchemaGraph(raw []byte) (recursive bool, err error) {
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return false, err
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return false, nil // a boolean schema
	}
	g := &schemaGraph{byPtr: map[string]*schemaNode{}, byURI: map[string]*schemaNode{}}
	switch obj["$schema"] {
	case "http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#":
		g.draft7 = true
	}
	rootNode := &schemaNode{obj: obj, ptr: "#", uri: &url.URL{}}
	rootNode.base = rootNode
	g.byURI[""] = rootNode
	if err := g.add(rootNode, rootNode); err != nil {
		return false, err
	}
	for _, n := range g.nodes {
		if err := g.link(n); err != nil {
			return false, err
		}
	}
	if cycle := g.cycle(func(e schemaEdge) bool { return e.applies == sameValue }); cycle != "" {
		return false, fmt.Errorf("its subschemas apply to the same value in a cycle (%s), so validation would never end", cycle)
	}
	return g.cycle(func(e schemaEdge) bool { return e.applies != notApplied }) != "", nil
}

// add records n, whose enclosing base is base, and the subschemas under
// it, with the URIs and anchors they declare.
func (g *schemaGraph) add(n, base *schemaNode) error {
	g.nodes = append(g.nodes, n)
	g.byPtr[n.ptr] = n
	_, hasRef := n.obj["$ref"]
	ignoreID := g.draft7 && hasRef // draft-07 ignores what is beside a $ref, its $id too
	if id, ok := n.obj["$id"].(string); ok && id != "" && !ignoreID {
		idURI, err := url.Parse(id)
		if err != nil {
			return err
		}
		if g.draft7 && idURI.Fragment != "" {
			setAnchor(base, strings.TrimPrefix(id, "#"), n, false)
		} else {
			n.uri = base.uri.ResolveReference(idURI)
			g.byURI[n.uri.String()] = n
			base = n
		}
	}
	n.base = base
	if !g.draft7 {
		if a, ok := n.obj["$anchor"].(string); ok && a != "" {
			setAnchor(base, a, n, false)
		}
		if a, ok := n.obj["$dynamicAnchor"].(string); ok && a != "" {
			setAnchor(base, a, n, true)
		}
	}
	for _, kw := range slices.Sorted(maps.Keys(n.obj)) {
		for ptr, sub := range subschemas(kw, n.obj[kw], n.ptr) {
			if obj, ok := sub.(map[string]any); ok {
				if err := g.add(&schemaNode{obj: obj, ptr: ptr}, base); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func setAnchor(base *schemaNode, name string, n *schemaNode, dynamic bool) {
	if base.anchors == nil {
		base.anchors = map[string]anchorNode{}
	}
	if _, ok := base.anchors[name]; !ok { // jsonschema-go refuses duplicates
		base.anchors[name] = anchorNode{n, dynamic}
	}
}

// subschemas returns the subschemas in the value v of keyword kw, by
// their pointers (under ptr, the pointer of the subschema that holds
// them).
func subschemas(kw string, v any, ptr string) map[string]any {
	shape, _ := keywordSchemas(kw)
	if shape == noSchemas {
		return nil
	}
	at := ptr + "/" + escapePointer(kw)
	subs := map[string]any{}
	switch x := v.(type) {
	case map[string]any:
		if shape == oneSchema || shape == oneSchemaOrArray {
			subs[at] = x
			break
		}
		if shape == schemaObject {
			for k, s := range x {
				subs[at+"/"+escapePointer(k)] = s
			}
		}
	case bool:
		if shape == oneSchema || shape == oneSchemaOrArray {
			subs[at] = x
		}
	case []any:
		if shape == schemaArray || shape == oneSchemaOrArray {
			for i, s := range x {
				subs[at+"/"+strconv.Itoa(i)] = s
			}
		}
	}
	return subs
}

// link adds n's edges: to the subschemas it holds and to those its
// references name.
func (g *schemaGraph) link(n *schemaNode) error {
	if ref, ok := n.obj["$ref"].(string); ok {
		to, _, err := g.resolve(n, ref)
		if err != nil {
			return fmt.Errorf("$ref %q at %s: %w", ref, n.ptr, err)
		}
		n.addEdge(to, sameValue, "$ref")
		if g.draft7 {
			return nil // draft-07 ignores every other keyword beside $ref
		}
	}
	if ref, ok := n.obj["$dynamicRef"].(string); ok {
		to, anchor, err := g.resolve(n, ref)
		if err != nil {
			return fmt.Errorf("$dynamicRef %q at %s: %w", ref, n.ptr, err)
		}
		n.addEdge(to, sameValue, "$dynamicRef")
		if anchor != "" { // it may go to any dynamic anchor of that name
			for _, m := range g.nodes {
				if a, ok := m.anchors[anchor]; ok && a.dynamic {
					n.addEdge(a.node, sameValue, "$dynamicRef")
				}
			}
		}
	}
	for _, kw := range slices.Sorted(maps.Keys(n.obj)) {
		_, applies := keywordSchemas(kw)
		for ptr := range subschemas(kw, n.obj[kw], n.ptr) {
			if to := g.byPtr[ptr]; to != nil {
				n.addEdge(to, applies, kw)
			}
		}
	}
	return nil
}

func (n *schemaNode) addEdge(to *schemaNode, applies schemaApplies, keyword string) {
	if to != nil && applies != notApplied {
		n.edges = append(n.edges, schemaEdge{to, applies, keyword})
	}
}

// resolve returns the subschema ref names from n (nil for a boolean
// schema), and the name of the dynamic anchor it names, if it does.
func (g *schemaGraph) resolve(n *schemaNode, ref string) (to *schemaNode, dynamicAnchor string, err error) {
	u, err := url.Parse(ref)
	if err != nil {
		return nil, "", err
	}
	u = n.base.uri.ResolveReference(u)
	doc := *u
	doc.Fragment = ""
	target := g.byURI[doc.String()]
	if target == nil {
		return nil, "", fmt.Errorf("no schema %q in the document", doc.String())
	}
	if frag := u.Fragment; frag != "" && !strings.HasPrefix(frag, "/") {
		a, ok := target.anchors[frag]
		if !ok {
			return nil, "", fmt.Errorf("no anchor %q", frag)
		}
		if a.dynamic {
			dynamicAnchor = frag
		}
		return a.node, dynamicAnchor, nil
	}
	return g.dereference(target, u.Fragment)
}

// dereference follows the JSON Pointer ptr from the subschema n, to a
// subschema (nil for a boolean one).
func (g *schemaGraph) dereference(n *schemaNode, ptr string) (*schemaNode, string, error) {
	if ptr == "" {
		return n, "", nil
	}
	var v any = n.obj
	at := n.ptr
	for seg := range strings.SplitSeq(ptr[1:], "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			v = x[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, "", fmt.Errorf("JSON Pointer %q: no item %q", ptr, seg)
			}
			v = x[i]
		default:
			return nil, "", fmt.Errorf("JSON Pointer %q: nothing at %q", ptr, seg)
		}
		at += "/" + escapePointer(seg)
	}
	if _, ok := v.(bool); ok {
		return nil, "", nil
	}
	to := g.byPtr[at]
	if to == nil {
		return nil, "", fmt.Errorf("JSON Pointer %q does not name a subschema", ptr)
	}
	return to, "", nil
}

// cycle returns a cycle of the edges follow keeps, written as the
// subschemas and keywords along it, or "" when there is none.
func (g *schemaGraph) cycle(follow func(schemaEdge) bool) string {
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[*schemaNode]int, len(g.nodes))
	var path []schemaEdge
	var visit func(n *schemaNode) string
	visit = func(n *schemaNode) string {
		state[n] = onPath
		for _, e := range n.edges {
			if !follow(e) {
				continue
			}
			switch state[e.to] {
			case onPath:
				var b strings.Builder
				start := len(path)
				for start > 0 && path[start-1].to != e.to {
					start--
				}
				b.WriteString(e.to.ptr)
				for _, p := range append(path[start:], e) {
					fmt.Fprintf(&b, " -%s-> %s", p.keyword, p.to.ptr)
				}
				return b.String()
			case unseen:
				path = append(path, e)
				if c := visit(e.to); c != "" {
					return c
				}
				path = path[:len(path)-1]
			}
		}
		state[n] = done
		return ""
	}
	for _, n := range g.nodes {
		if state[n] == unseen {
			if c := visit(n); c != "" {
				return c
			}
		}
	}
	return ""
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
