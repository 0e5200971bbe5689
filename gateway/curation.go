package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/vigil-mcp/vigil/gateway/internal/openapi"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// curation returns how the catalog serves the upstream's items; nil:
// as the upstream lists them.
func (m *mount) curation() *upstreamCuration {
	c := m.g.catalog.Load()
	if c == nil {
		return nil
	}
	return c.upstreams[m.up.Name]
}

// tool returns how the upstream's tool own is served; nil: as listed.
func (u *upstreamCuration) tool(own string) *toolCuration {
	if u == nil {
		return nil
	}
	return u.tools[own]
}

// prompt returns how the upstream's prompt own is served; nil: as listed.
func (u *upstreamCuration) prompt(own string) *promptCuration {
	if u == nil {
		return nil
	}
	return u.prompts[own]
}

// shape serves t (the upstream's tool, its own name in t.Name) as tc
// says: its served name (tc's, else prefix and its own), title,
// description and annotations, and its input schema without its fixed
// arguments and with its defaults. An error names an argument tc fixes
// or defaults that the schema does not have: the tool is then withheld.
func (tc *toolCuration) shape(t *server.Tool, prefix string) error {
	own := t.Name
	t.Name = prefix + own
	if tc == nil {
		return nil
	}
	if tc.name != "" {
		t.Name = tc.name
	}
	if tc.title != "" {
		t.Title = tc.title
	}
	if tc.description != "" {
		t.Description = tc.description
	}
	if len(tc.annotations) > 0 {
		a, err := mergedAnnotations(t.Annotations, tc.annotations)
		if err != nil {
			return err
		}
		t.Annotations = a
	}
	if len(tc.fixed) == 0 && len(tc.defaults) == 0 {
		return nil
	}
	schema, err := narrowedSchema(t.InputSchema, tc)
	if err != nil {
		return fmt.Errorf("tool %s: %w", own, err)
	}
	t.InputSchema = schema
	return nil
}

// mergedAnnotations returns the upstream's annotations with set's over
// them.
func mergedAnnotations(up *server.ToolAnnotations, set map[string]any) (*server.ToolAnnotations, error) {
	merged := map[string]any{}
	if up != nil {
		raw, _ := json.Marshal(up) // a struct of strings and bools encodes
		_ = json.Unmarshal(raw, &merged)
	}
	maps.Copy(merged, set)
	raw, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	var a server.ToolAnnotations
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("annotations: %w", err)
	}
	return &a, nil
}

// narrowedSchema returns the input schema in without the properties tc
// fixes (from properties and required) and with the defaults tc gives
// set on theirs; an error names an argument that in does not have.
func narrowedSchema(in json.RawMessage, tc *toolCuration) (json.RawMessage, error) {
	var schema map[string]json.RawMessage
	if err := json.Unmarshal(in, &schema); err != nil {
		return nil, fmt.Errorf("its input schema: %w", err)
	}
	var props map[string]json.RawMessage
	_ = json.Unmarshal(schema["properties"], &props)
	for _, name := range sortedKeys(tc.fixed) {
		if _, ok := props[name]; !ok {
			return nil, fmt.Errorf("argument %q is fixed by the catalog, but its input schema has no such property", name)
		}
		delete(props, name)
	}
	for _, name := range sortedKeys(tc.defaults) {
		var prop map[string]json.RawMessage
		if err := json.Unmarshal(props[name], &prop); err != nil || prop == nil {
			return nil, fmt.Errorf("argument %q has a default in the catalog, but its input schema has no such property", name)
		}
		prop["default"] = tc.defaults[name]
		props[name], _ = json.Marshal(prop) // decoded JSON encodes
	}
	schema["properties"], _ = json.Marshal(props)
	if raw, ok := schema["required"]; ok {
		var required []string
		_ = json.Unmarshal(raw, &required)
		required = slices.DeleteFunc(required, func(n string) bool { return tc.fixed[n] != nil })
		if len(required) == 0 {
			delete(schema, "required")
		} else {
			schema["required"], _ = json.Marshal(required)
		}
	}
	return json.Marshal(schema)
}

// sortedKeys returns m's keys, sorted.
func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// narrowsArguments reports whether calls need their arguments rewritten.
func (tc *toolCuration) narrowsArguments() bool {
	return tc != nil && (len(tc.fixed) > 0 || len(tc.defaults) > 0)
}

// curated returns h, which forwards a call of the tool upstream, with the
// arguments tc fixes set and those it defaults set when the caller sent
// none; a call that sends a fixed argument, under its name or any
// spelling of it (fixedSpelling), is refused as invalid params (-32602),
// unsent. Every route of a call to the tool passes h: tools/call at any
// endpoint, search's call_tool, a task, either era.
func (tc *toolCuration) curated(h server.ToolHandler) server.ToolHandler {
	if !tc.narrowsArguments() {
		return h
	}
	return func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		args, err := tc.arguments(req.Name, req.Arguments)
		if err != nil {
			return nil, err
		}
		call := *req
		call.Arguments = args
		return h(ctx, &call)
	}
}

// arguments returns the arguments sent upstream for a call of the served
// tool named served with the caller's args.
func (tc *toolCuration) arguments(served string, args json.RawMessage) (json.RawMessage, error) {
	var sent map[string]json.RawMessage
	if len(args) > 0 {
		if err := json.Unmarshal(args, &sent); err != nil {
			return nil, server.NewError(protocol.CodeInvalidParams, fmt.Errorf("tools/call: arguments must be an object: %w", err))
		}
	}
	if sent == nil {
		sent = map[string]json.RawMessage{}
	}
	if len(tc.fixed) > 0 {
		for _, key := range sortedKeys(sent) {
			if name, ok := tc.fixedSpelling(key); ok {
				why := ""
				if key != name {
					why = " (it spells, in another case, an argument the gateway sets)"
				}
				return nil, server.NewError(protocol.CodeInvalidParams, fmt.Errorf("invalid arguments for tool %q: %+q is not an argument of this tool%s", served, key, why))
			}
		}
	}
	maps.Copy(sent, tc.fixed)
	for name, v := range tc.defaults {
		if _, ok := sent[name]; !ok {
			sent[name] = v
		}
	}
	return json.Marshal(sent)
}

// fixedSpelling returns the argument tc fixes that key spells, and
// whether it spells one: the name itself, or a name that encoding/json,
// decoding the arguments into a struct (as a Go upstream, mcp-go's
// argument binding among them, does), would match key to. encoding/json
// matches a member to a field by its exact name, else by its name under
// Unicode simple case folding (its foldName, documented as equal to
// bytes.EqualFold): "tenantid" and "TENANTID" spell "tenantId", "Kind"
// (the Kelvin sign) spells "kind", "ſkip" (long s) spells "skip". The
// upstream gets the arguments as one object with the fixed value under
// its name: a member that spells it beside that one would be decoded
// after or instead of it. FuzzFixedArgumentSpellings holds the rule to
// encoding/json's.
func (tc *toolCuration) fixedSpelling(key string) (string, bool) {
	if _, ok := tc.fixed[key]; ok {
		return key, true
	}
	for _, name := range sortedKeys(tc.fixed) {
		if strings.EqualFold(key, name) {
			return name, true
		}
	}
	return "", false
}

// shapePrompt serves p (the upstream's prompt, its own name in p.Name)
// as pc says.
func (pc *promptCuration) shapePrompt(p *server.Prompt, prefix string) {
	p.Name = prefix + p.Name
	if pc == nil {
		return
	}
	if pc.name != "" {
		p.Name = pc.name
	}
	if pc.description != "" {
		p.Description = pc.description
	}
}

// withhold logs and counts, once per tool and catalog, that the
// upstream's tool own is withheld: the catalog could not serve it as it
// says (err).
func (m *mount) withhold(own string, err error) {
	if _, warned := m.withheld.LoadOrStore(own, true); warned {
		return
	}
	m.log.Warn("gateway: the catalog cannot serve an upstream's tool as it says: the tool is withheld", "upstream", m.up.Name, "tool", own, "error", err)
	if t := m.g.tally[m.up.Name]; t != nil {
		t.withheld.Add(1)
	}
}

// SetCatalog replaces the operator's catalog (Config.Catalog; nil: none)
// and has each upstream listed again to serve what it says, as after a
// list_changed: sessions live on, and callers are told list_changed of
// what changed. It fails, the catalog kept, when c names an upstream the
// gateway does not front.
func (g *Gateway) SetCatalog(c *Catalog) error {
	ups := make([]Upstream, len(g.mounts))
	for i, m := range g.mounts {
		ups[i] = m.up
	}
	if err := c.check(ups); err != nil {
		return err
	}
	apis := map[string]*openapi.API{}
	for _, m := range g.mounts {
		if m.rest != nil {
			apis[m.up.Name] = m.rest.api
		}
	}
	if err := c.checkOperations(apis); err != nil { // restpick.go
		return err
	}
	if prev := g.catalog.Load(); c != nil && c.lock == nil && prev != nil {
		with := *c
		with.lock = prev.lock // the lock stays until one is given (WithLock)
		c = &with
	}
	for _, m := range g.mounts {
		if u := c.curationOf(m.up.Name); u != nil && u.sandbox != nil && !reflect.DeepEqual(*u.sandbox, m.up.Sandbox) {
			g.log.Warn("the catalog's sandbox of an upstream changed: it applies at the next start of vigil, not to this one", "upstream", m.up.Name)
		}
	}
	g.catalog.Store(c)
	c.sayDefault(g.log)
	for _, m := range g.mounts {
		m.withheld.Clear()
		select { // refreshLoop lists it again
		case m.stale <- struct{}{}:
		default:
		}
	}
	return nil
}
