package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"
)

// Default bounds of a call, which [API.MaxResponseBytes] and [API.Timeout]
// start at.
const (
	DefaultMaxResponseBytes = 4 << 20
	DefaultTimeout          = 60 * time.Second
)

// ErrSwagger2 is the error of [Load] given a Swagger 2.0 description.
var ErrSwagger2 = errors.New("openapi: Swagger 2.0 descriptions are not supported: convert it to OpenAPI 3 first (for example with swagger2openapi)")

// An API is a loaded OpenAPI description: its tools and how to call them.
// Its methods are safe for concurrent use; MaxResponseBytes and Timeout
// are set, if at all, before the first call.
type API struct {
	// MaxResponseBytes bounds the body of an answer; a longer one is a
	// tool error. Load sets it to DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Timeout bounds a call, redirects and body included. Load sets it to
	// DefaultTimeout.
	Timeout time.Duration

	base    *url.URL
	tools   []Tool
	ops     map[string]*operation
	schemes []SecurityScheme
}

// A SecurityScheme is one of the description's security schemes that its
// security requirements (the document's or an operation's) name.
type SecurityScheme struct {
	Name string // its key under components.securitySchemes
	Type string // apiKey, http, oauth2, openIdConnect or mutualTLS
	// In and Param are an apiKey's location (header, query or cookie)
	// and parameter name; Scheme is an http scheme's (bearer, basic, ...),
	// lowercase.
	In, Param, Scheme string
}

// SecuritySchemes returns the security schemes the description's
// requirements name, by name; the caller may not modify them.
func (a *API) SecuritySchemes() []SecurityScheme { return a.schemes }

// securitySchemes returns the schemes of doc that its requirements name.
func securitySchemes(doc *openapi3.T) []SecurityScheme {
	used := map[string]bool{}
	add := func(reqs openapi3.SecurityRequirements) {
		for _, r := range reqs {
			for name := range r {
				used[name] = true
			}
		}
	}
	add(doc.Security)
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.Security != nil {
				add(*op.Security)
			}
		}
	}
	var out []SecurityScheme
	if doc.Components == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(used)) {
		ref := doc.Components.SecuritySchemes[name]
		if ref == nil || ref.Value == nil {
			continue
		}
		v := ref.Value
		out = append(out, SecurityScheme{Name: name, Type: v.Type, In: v.In, Param: v.Name, Scheme: strings.ToLower(v.Scheme)})
	}
	return out
}

// Load parses an OpenAPI 3.0 or 3.1 description, in JSON or YAML, and
// builds its tools. base is the URL its calls go to; when empty, the
// description's first servers entry, which must then be an absolute http
// or https URL (its variables take their defaults). A base with user
// information, a query or a fragment is refused: credentials belong in the
// client's headers, not in a URL that logs may print. External $refs are
// refused; so is a Swagger 2.0 description ([ErrSwagger2]).
func Load(data []byte, base string) (*API, error) {
	raw, err := decodeDocument(data)
	if err != nil {
		return nil, fmt.Errorf("openapi: not a JSON or YAML document: %w", err)
	}
	top, _ := raw.(map[string]any)
	if _, ok := top["swagger"]; ok {
		return nil, ErrSwagger2
	}
	version, _ := top["openapi"].(string)
	if _, ok := top["openapi"]; !ok {
		return nil, errors.New("openapi: no openapi field: not an OpenAPI 3 description")
	}
	if !strings.HasPrefix(version, "3.0") && !strings.HasPrefix(version, "3.1") {
		return nil, fmt.Errorf("openapi: version %v is not supported: OpenAPI 3.0 or 3.1 only (a string, \"3.0.3\" or \"3.1.0\")", top["openapi"])
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	loader.Context = context.Background()
	doc, err := parse(loader, data, raw)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	if err := validate(loader.Context, doc); err != nil {
		return nil, fmt.Errorf("openapi: invalid description: %w", err)
	}
	b, err := baseURL(doc, base)
	if err != nil {
		return nil, err
	}
	a := &API{
		MaxResponseBytes: DefaultMaxResponseBytes,
		Timeout:          DefaultTimeout,
		base:             b,
		ops:              make(map[string]*operation),
		schemes:          securitySchemes(doc),
	}
	r := &resolver{doc: raw, v30: strings.HasPrefix(version, "3.0")}
	names := make(map[string]bool)
	paths := doc.Paths.InMatchingOrder()
	slices.Sort(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		for _, method := range methods {
			op := item.GetOperation(method)
			if op == nil {
				continue
			}
			o, err := r.operation(path, method, item, op)
			if err != nil {
				return nil, fmt.Errorf("openapi: %s %s: %w", method, path, err)
			}
			o.tool.Name = toolName(op.OperationID, method, path, names)
			o.tool.Method, o.tool.Path, o.tool.Tags = method, path, slices.Clone(op.Tags)
			a.ops[o.tool.Name] = o
			a.tools = append(a.tools, o.tool)
		}
	}
	return a, nil
}

// parse builds kin-openapi's document from the description's JSON (raw,
// decoded already, as JSON when data is YAML) and resolves its $refs.
// Loader.LoadFromData reads JSON with its YAML decoder, which allocates
// twice as much on GitHub's description (docs/performance.md).
func parse(loader *openapi3.Loader, data []byte, raw any) (*openapi3.T, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' || !json.Valid(data) {
		var err error
		if data, err = json.Marshal(raw); err != nil {
			return nil, err
		}
	}
	doc := &openapi3.T{}
	if err := json.Unmarshal(data, doc); err != nil {
		return nil, err
	}
	if err := loader.ResolveRefsIn(doc, nil); err != nil {
		return nil, err
	}
	return doc, nil
}

// validate checks doc as kin-openapi does, with two exceptions that the
// published descriptions need: examples are not checked against their
// schemas (they are documentation; GitHub's has some that do not match),
// and two paths that differ only in their parameters' names
// ("/orgs/{org}/attestations/{subject_digest}" and
// "…/{attestation_id}", both GitHub's) are not a conflict: a server
// routing requests must tell them apart, a client sending them need not.
// Each path is checked on its own.
func validate(ctx context.Context, doc *openapi3.T) error {
	opts := []openapi3.ValidationOption{openapi3.DisableExamplesValidation()}
	paths := doc.Paths
	doc.Paths = openapi3.NewPaths()
	err := doc.Validate(ctx, opts...)
	doc.Paths = paths
	if err != nil || paths == nil {
		return err
	}
	if doc.IsOpenAPI31OrLater() {
		opts = append(opts, openapi3.IsOpenAPI31OrLater())
	}
	for _, path := range paths.Keys() {
		one := openapi3.NewPaths(openapi3.WithPath(path, paths.Value(path)))
		if err := one.Validate(ctx, opts...); err != nil {
			return fmt.Errorf("invalid paths: %w", err)
		}
	}
	return nil
}

// methods are the HTTP methods of operations, in the order Load lists
// each path's tools.
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}

// Tools returns the API's tools, by path then method; the caller may not
// modify them.
func (a *API) Tools() []Tool { return a.tools }

// Base returns the URL calls go to.
func (a *API) Base() string { return a.base.String() }

// baseURL is the URL calls go to: base if given, else the description's
// first server.
func baseURL(doc *openapi3.T, base string) (*url.URL, error) {
	if base == "" {
		if len(doc.Servers) == 0 {
			return nil, errors.New("openapi: the description names no server: give a base URL")
		}
		s := doc.Servers[0]
		base = s.URL
		for name, v := range s.Variables {
			base = strings.ReplaceAll(base, "{"+name+"}", v.Default)
		}
	}
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return nil, fmt.Errorf("openapi: base URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return nil, fmt.Errorf("openapi: base URL %q is not an absolute http or https URL: give one", base)
	case u.User != nil:
		return nil, errors.New("openapi: base URL carries user information: put credentials in headers")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, fmt.Errorf("openapi: base URL %q has a query or fragment", u.Redacted())
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	return u, nil
}

// decodeDocument decodes a JSON or YAML document: JSON with encoding/json, much
// faster on the big descriptions, which are JSON.
func decodeDocument(data []byte) (any, error) {
	var raw any
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		if err := unmarshalNumbers(data, &raw); err == nil {
			return raw, nil
		}
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	return normalize(raw), nil
}

// normalize turns the maps YAML decodes with non-string keys into maps
// with string keys, so that JSON pointers and encoding/json handle them.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalize(e)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = normalize(e)
		}
		return v
	}
	return v
}

// unmarshalNumbers decodes JSON as json.Unmarshal does, but numbers as
// json.Number: a schema's bounds and enums keep their digits.
func unmarshalNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the document")
	}
	return nil
}

// jsonText is v as JSON, for schemas built of decoded JSON and YAML.
func jsonText(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}
