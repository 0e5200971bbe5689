package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/server"
)

// maxCatalogFile bounds the bytes of a catalog file ParseCatalog reads.
const maxCatalogFile = 4 << 20

// Catalog is the operator's catalog (vigil -catalog FILE; the format is
// docs/gateway.md's "The operator's catalog"): per upstream, how each of
// its tools and prompts is served (renamed, described, annotated, hidden,
// arguments fixed or defaulted) and whether its definitions are pinned;
// the named endpoints, each serving a selection of the upstreams' tools,
// prompts and resources to callers with its scopes; and what the default
// endpoint (/mcp, and a server over stdio) serves: everything, nothing,
// or a selection with scopes as a named endpoint's. Build it with
// [ParseCatalog], and [Catalog.WithLock] for pinning; it is immutable,
// safe to share.
type Catalog struct {
	upstreams map[string]*upstreamCuration
	endpoints map[string]*endpointSpec
	// def is what the default endpoint serves (its key default): nil,
	// everything (all); else its selection and scopes, or nothing (off).
	// Without the key: everything, unless a named endpoint has scopes,
	// then nothing, so that a token of one endpoint's scope reaches no
	// other tool by the default endpoint.
	def        *endpointSpec
	offImplied bool           // def is off for want of the key (beside scoped endpoints): logged (sayDefault)
	lines      map[string]int // "upstream NAME" -> its line, for errors that need the upstreams (check)
	lock       *lockFile      // the approved definitions (WithLock); nil: none (pinning.go)
}

// upstreamCuration is how one upstream's tools and prompts are served.
type upstreamCuration struct {
	sandbox *Sandbox // its sandbox's profile (the key sandbox); nil: none given
	pin     string   // "", pinWarn or pinHold
	tools   map[string]*toolCuration
	prompts map[string]*promptCuration
}

// The values of an upstream's pin.
const (
	pinWarn = "warn"
	pinHold = "hold"
)

// toolCuration is how one upstream tool is served; empty strings and nil
// keep the upstream's own.
type toolCuration struct {
	name, title, description string
	annotations              map[string]any // merged over the upstream's
	tags                     []string
	hide                     bool
	fixed                    map[string]json.RawMessage // argument -> its value, set upstream, unseen by the caller
	defaults                 map[string]json.RawMessage // argument -> its default, set when the caller sends none
	line                     int
}

// promptCuration is how one upstream prompt is served.
type promptCuration struct {
	name, description string
}

// endpointSpec is one named endpoint: /mcp/NAME.
type endpointSpec struct {
	name                      string
	tools, prompts, resources []selector
	scopes                    []string
	// search turns tools/list into search_tools and call_tool at this
	// endpoint (search.go); parsed here so that the file is parsed in one
	// place.
	search bool
	// off is the default endpoint that serves nothing (default: off):
	// Endpoints answers its requests 404.
	off bool
}

// The values of the key default besides an endpoint's mapping.
const (
	defaultAll = "all"
	defaultOff = "off"
)

// selector picks items for an endpoint: an upstream's items whose own
// names a glob matches, or the tools with a tag; or an OpenAPI
// upstream's tools whose operation has a tag (opTag) or a path template
// a glob matches (opPath, see matchesPath: restpick.go).
type selector struct {
	upstream, glob, tag string
	opTag, opPath       string
}

// ParseCatalog parses a catalog file, refusing, with its line, a key it
// does not know, a key given twice, a value of the wrong kind, a pin
// other than warn or hold, an argument both fixed and defaulted, two
// tools or prompts of one upstream served under one name, a malformed
// selector or endpoint name, a default other than all, off or an
// endpoint's mapping. An upstream the gateway does not front is refused
// by [Mount] and [Gateway.SetCatalog], with its line.
func ParseCatalog(data []byte) (*Catalog, error) {
	if len(data) > maxCatalogFile {
		return nil, fmt.Errorf("gateway: catalog: %d bytes, over the bound of %d", len(data), maxCatalogFile)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty file
		return nil, fmt.Errorf("gateway: catalog: %w", err)
	}
	c := &Catalog{upstreams: map[string]*upstreamCuration{}, endpoints: map[string]*endpointSpec{}, lines: map[string]int{}}
	if len(doc.Content) == 0 {
		return c, nil // an empty file: nothing curated
	}
	saidDefault := false
	err := eachKey(doc.Content[0], "the catalog", func(k, v *yaml.Node) error {
		switch k.Value {
		case "upstreams":
			return eachKey(v, "upstreams", func(k, v *yaml.Node) error {
				c.lines["upstream "+k.Value] = k.Line
				u, err := parseUpstreamCuration(k.Value, v)
				c.upstreams[k.Value] = u
				return err
			})
		case "endpoints":
			return eachKey(v, "endpoints", func(k, v *yaml.Node) error {
				if !validEndpointName(k.Value) {
					return fmt.Errorf("line %d: endpoint name %q: use 1 to 64 letters, digits, '-' and '.'", k.Line, k.Value)
				}
				e, err := parseEndpoint(k.Value, v)
				c.endpoints[k.Value] = e
				return err
			})
		case "default":
			saidDefault = true
			var err error
			c.def, err = parseDefault(k, v)
			return err
		}
		return fmt.Errorf("line %d: unknown key %q (a catalog has upstreams, endpoints and default)", k.Line, k.Value)
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: catalog: %w", err)
	}
	if !saidDefault && c.scoped() {
		c.def, c.offImplied = &endpointSpec{name: "default", off: true}, true
	}
	return c, nil
}

// sayDefault logs, when c turns the default endpoint off for want of
// its key default, that /mcp serves nothing, and why.
func (c *Catalog) sayDefault(logger *slog.Logger) {
	if c != nil && c.offImplied {
		logger.Warn("gateway: the catalog's endpoints have scopes and it does not say what the default endpoint serves: /mcp (and stdio) serves nothing; " +
			"write default: all to serve everything there, or an endpoint's tools and scopes (docs/gateway.md, \"The operator's catalog\")")
	}
}

// parseDefault parses the key default: all (nil: everything), off, or an
// endpoint's mapping.
func parseDefault(k, v *yaml.Node) (*endpointSpec, error) {
	if v.Kind == yaml.MappingNode {
		return parseEndpoint("default", v)
	}
	var say string
	if err := scalar(k, v, &say); err != nil || say != defaultAll && say != defaultOff {
		return nil, fmt.Errorf("line %d: default: want all, off or an endpoint's mapping (tools, prompts, resources, scopes, search)", v.Line)
	}
	if say == defaultOff {
		return &endpointSpec{name: "default", off: true}, nil
	}
	return nil, nil
}

// scoped reports whether one of the named endpoints has scopes.
func (c *Catalog) scoped() bool {
	for _, e := range c.endpoints {
		if len(e.scopes) > 0 {
			return true
		}
	}
	return false
}

// eachKey calls f with each key and value of the mapping n, refusing a
// node that is not a mapping and a key given twice.
func eachKey(n *yaml.Node, what string, f func(k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		if n.Tag == "!!null" {
			return nil
		}
		return fmt.Errorf("line %d: %s must be a mapping", n.Line, what)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			return fmt.Errorf("line %d: %s: %q given twice", k.Line, what, k.Value)
		}
		seen[k.Value] = true
		if err := f(k, v); err != nil {
			return err
		}
	}
	return nil
}

// scalar decodes the scalar v into dst, refusing another kind.
func scalar(k, v *yaml.Node, dst any) error {
	if v.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: %s must be a scalar", v.Line, k.Value)
	}
	if err := v.Decode(dst); err != nil {
		return fmt.Errorf("line %d: %s: %w", v.Line, k.Value, err)
	}
	return nil
}

// stringList decodes a sequence of strings.
func stringList(k, v *yaml.Node) ([]string, error) {
	var out []string
	if v.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: %s must be a list", v.Line, k.Value)
	}
	for _, it := range v.Content {
		var s string
		if err := scalar(k, it, &s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// parseUpstreamCuration parses one upstream's entry.
func parseUpstreamCuration(name string, n *yaml.Node) (*upstreamCuration, error) {
	u := &upstreamCuration{tools: map[string]*toolCuration{}, prompts: map[string]*promptCuration{}}
	served := map[string]string{} // served name -> the upstream's own
	err := eachKey(n, "upstream "+name, func(k, v *yaml.Node) error {
		switch k.Value {
		case "sandbox":
			var spec string
			if err := scalar(k, v, &spec); err != nil {
				return err
			}
			sb, err := ParseSandbox(spec)
			if err != nil {
				return fmt.Errorf("line %d: sandbox: %w", v.Line, err)
			}
			if err := sb.check(); err != nil {
				return fmt.Errorf("line %d: %w", v.Line, err)
			}
			u.sandbox = &sb
			return nil
		case "pin":
			if err := scalar(k, v, &u.pin); err != nil {
				return err
			}
			if u.pin != pinWarn && u.pin != pinHold {
				return fmt.Errorf("line %d: pin %q: want warn or hold", v.Line, u.pin)
			}
			return nil
		case "tools":
			return eachKey(v, "tools", func(k, v *yaml.Node) error {
				t, err := parseToolCuration(k, v)
				if err != nil {
					return err
				}
				if t.name != "" {
					if other, dup := served[t.name]; dup {
						return fmt.Errorf("line %d: tool %s is served as %q, as tool %s is", k.Line, k.Value, t.name, other)
					}
					served[t.name] = k.Value
				}
				u.tools[k.Value] = t
				return nil
			})
		case "prompts":
			names := map[string]string{}
			return eachKey(v, "prompts", func(k, v *yaml.Node) error {
				p := &promptCuration{}
				err := eachKey(v, "prompt "+k.Value, func(pk, pv *yaml.Node) error {
					switch pk.Value {
					case "name":
						return servedName(pk, pv, &p.name)
					case "description":
						return scalar(pk, pv, &p.description)
					}
					return fmt.Errorf("line %d: unknown key %q (a prompt has name and description)", pk.Line, pk.Value)
				})
				if err != nil {
					return err
				}
				if other, dup := names[p.name]; dup && p.name != "" {
					return fmt.Errorf("line %d: prompt %s is served as %q, as prompt %s is", k.Line, k.Value, p.name, other)
				}
				names[p.name] = k.Value
				u.prompts[k.Value] = p
				return nil
			})
		}
		return fmt.Errorf("line %d: unknown key %q (an upstream has sandbox, pin, tools and prompts)", k.Line, k.Value)
	})
	return u, err
}

// servedName decodes a served name, refusing one MCP does not allow.
func servedName(k, v *yaml.Node, dst *string) error {
	if err := scalar(k, v, dst); err != nil {
		return err
	}
	if !vocab.ValidToolName(*dst) {
		return fmt.Errorf("line %d: name %q: use 1 to 128 letters, digits, '_', '-' and '.'", v.Line, *dst)
	}
	return nil
}

// parseToolCuration parses one tool's entry.
func parseToolCuration(key, n *yaml.Node) (*toolCuration, error) {
	t := &toolCuration{line: key.Line}
	err := eachKey(n, "tool "+key.Value, func(k, v *yaml.Node) error {
		switch k.Value {
		case "name":
			return servedName(k, v, &t.name)
		case "title":
			return scalar(k, v, &t.title)
		case "description":
			return scalar(k, v, &t.description)
		case "hide":
			return scalar(k, v, &t.hide)
		case "tags":
			var err error
			t.tags, err = stringList(k, v)
			return err
		case "annotations":
			return parseAnnotations(k, v, t)
		case "arguments":
			return eachKey(v, "arguments", func(ak, av *yaml.Node) error { return parseArgument(ak, av, t) })
		}
		return fmt.Errorf("line %d: unknown key %q (a tool has name, title, description, annotations, tags, hide and arguments)", k.Line, k.Value)
	})
	return t, err
}

// parseAnnotations decodes a tool's annotations, refusing one MCP does
// not define.
func parseAnnotations(k, v *yaml.Node, t *toolCuration) error {
	if err := v.Decode(&t.annotations); err != nil || v.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: annotations must be a mapping", v.Line)
	}
	raw, err := json.Marshal(t.annotations)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		err = dec.Decode(&server.ToolAnnotations{})
	}
	if err != nil {
		return fmt.Errorf("line %d: %s: %w (title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint)", v.Line, k.Value, err)
	}
	return nil
}

// parseArgument parses one argument's entry: fixed or default.
func parseArgument(k, v *yaml.Node, t *toolCuration) error {
	return eachKey(v, "argument "+k.Value, func(ak, av *yaml.Node) error {
		var val any
		if err := av.Decode(&val); err != nil {
			return fmt.Errorf("line %d: %w", av.Line, err)
		}
		raw, err := json.Marshal(val)
		if err != nil {
			return fmt.Errorf("line %d: argument %s: %w", av.Line, k.Value, err)
		}
		dst := &t.defaults
		switch ak.Value {
		case "fixed":
			dst = &t.fixed
		case "default":
		default:
			return fmt.Errorf("line %d: unknown key %q (an argument is fixed or has a default)", ak.Line, ak.Value)
		}
		if t.fixed[k.Value] != nil || t.defaults[k.Value] != nil {
			return fmt.Errorf("line %d: argument %s is both fixed and defaulted", ak.Line, k.Value)
		}
		if *dst == nil {
			*dst = map[string]json.RawMessage{}
		}
		(*dst)[k.Value] = raw
		return nil
	})
}

// parseEndpoint parses one endpoint's entry.
func parseEndpoint(name string, n *yaml.Node) (*endpointSpec, error) {
	e := &endpointSpec{name: name}
	err := eachKey(n, "endpoint "+name, func(k, v *yaml.Node) error {
		switch k.Value {
		case "tools", "prompts", "resources":
			list, err := stringList(k, v)
			if err != nil {
				return err
			}
			sels := make([]selector, 0, len(list))
			for _, s := range list {
				sel, ok := parseSelector(s, k.Value == "tools")
				if !ok {
					return fmt.Errorf("line %d: %s: %q: want UPSTREAM/GLOB, a glob of path.Match over the upstream's own names (for tools also tag:TAG, and for an OpenAPI upstream's UPSTREAM/tag:TAG or UPSTREAM/path:/GLOB)", v.Line, k.Value, s)
				}
				sels = append(sels, sel)
			}
			switch k.Value {
			case "tools":
				e.tools = sels
			case "prompts":
				e.prompts = sels
			default:
				e.resources = sels
			}
			return nil
		case "scopes":
			var err error
			e.scopes, err = stringList(k, v)
			return err
		case "search":
			return scalar(k, v, &e.search)
		}
		return fmt.Errorf("line %d: unknown key %q (an endpoint has tools, prompts, resources, scopes and search)", k.Line, k.Value)
	})
	return e, err
}

// parseSelector parses UPSTREAM/GLOB; when tags (tools) are allowed,
// tag:TAG, and an OpenAPI upstream's UPSTREAM/tag:TAG and
// UPSTREAM/path:GLOB (a glob of path.Match starting with '/'). A tool's
// name has no ':', so neither form shadows a glob of names.
func parseSelector(s string, tags bool) (selector, bool) {
	if tag, ok := strings.CutPrefix(s, "tag:"); ok {
		return selector{tag: tag}, tags && tag != ""
	}
	up, glob, ok := strings.Cut(s, "/")
	if !ok || up == "" || glob == "" {
		return selector{}, false
	}
	if tag, ok := strings.CutPrefix(glob, "tag:"); ok {
		return selector{upstream: up, opTag: tag}, tags && tag != ""
	}
	if p, ok := strings.CutPrefix(glob, "path:"); ok {
		_, err := path.Match(p, "")
		return selector{upstream: up, opPath: p}, tags && strings.HasPrefix(p, "/") && err == nil
	}
	if _, err := path.Match(glob, ""); err != nil {
		return selector{}, false
	}
	return selector{upstream: up, glob: glob}, true
}

// validEndpointName reports whether name may name an endpoint: a path
// segment of letters, digits, '-' and '.'.
func validEndpointName(name string) bool {
	if name == "" || len(name) > 64 || name == "." || name == ".." {
		return false
	}
	for _, r := range name {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		if !letter && (r < '0' || r > '9') && r != '-' && r != '.' {
			return false
		}
	}
	return true
}

// check refuses, with its line, an upstream or a selector's upstream that
// ups does not name.
func (c *Catalog) check(ups []Upstream) error {
	if c == nil {
		return nil
	}
	known := make([]string, len(ups))
	for i, up := range ups {
		known[i] = up.Name
	}
	for name := range c.upstreams {
		if !slices.Contains(known, name) {
			return fmt.Errorf("gateway: catalog: line %d: upstream %q is not one the gateway fronts (%s)", c.lines["upstream "+name], name, strings.Join(known, ", "))
		}
	}
	for _, e := range c.allEndpoints() {
		for _, sels := range [][]selector{e.tools, e.prompts, e.resources} {
			for _, s := range sels {
				if s.upstream != "" && !slices.Contains(known, s.upstream) {
					return fmt.Errorf("gateway: catalog: endpoint %s: upstream %q is not one the gateway fronts (%s)", e.name, s.upstream, strings.Join(known, ", "))
				}
				if (s.opTag != "" || s.opPath != "") && ups[slices.Index(known, s.upstream)].OpenAPI == nil {
					return fmt.Errorf("gateway: catalog: endpoint %s: %s: upstream %s is not an OpenAPI upstream: tag: and path: select the operations of a REST API", e.name, s, s.upstream)
				}
			}
		}
	}
	return nil
}

// allEndpoints returns the named endpoints, by name, and the default
// endpoint's selection when the catalog gives one.
func (c *Catalog) allEndpoints() []*endpointSpec {
	all := slices.SortedFunc(maps.Values(c.endpoints), func(a, b *endpointSpec) int { return strings.Compare(a.name, b.name) })
	if c.def != nil {
		all = append(all, c.def)
	}
	return all
}
