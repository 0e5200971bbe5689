package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/yosida95/uritemplate/v3"
)

// ErrResourceNotFound is what a [ResourceHandler] returns (possibly
// wrapped) to say that the resource it was asked for does not exist, for
// instance when a template's variables name nothing. The client then gets
// the same error as for a URI that no resource or template serves.
var ErrResourceNotFound = errors.New("mcp: resource not found")

// Resource describes a resource with a fixed URI, as resources/list shows it.
type Resource struct {
	// URI identifies the resource: an absolute URI (RFC 3986).
	URI string `json:"uri"`
	// Name is the resource's programmatic name; required.
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	// Size is the raw content's size in bytes, if known.
	Size        *int64       `json:"size,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ResourceTemplate describes a family of resources whose URIs match an RFC
// 6570 URI template, as resources/templates/list shows it.
type ResourceTemplate struct {
	// URITemplate is the RFC 6570 template, e.g. "weather://{city}/today".
	URITemplate string `json:"uriTemplate"`
	// Name is the template's programmatic name; required.
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
	// Complete holds the completers of the template's variables, by
	// variable name, for completion/complete. A variable without one
	// completes to nothing. It is not sent to clients.
	Complete map[string]CompleteFunc `json:"-"`
}

// ResourceHandler reads a resource. It returns [ErrResourceNotFound] when
// the resource does not exist and an [*Error] to answer with a protocol
// error of its choice; any other error is answered as [protocol.CodeInternal].
// Handlers run concurrently, one goroutine per request.
type ResourceHandler func(ctx context.Context, req *ReadResourceRequest) (*ReadResourceResult, error)

// ReadResourceRequest is what a [ResourceHandler] receives.
type ReadResourceRequest struct {
	Request *Request // the underlying request (session, id, ...)
	URI     string   // the URI the client asked for
	// Template is the uriTemplate that matched the URI; empty for a
	// resource registered with a fixed URI.
	Template string
	// Variables are the template's variables as matched in URI, decoded;
	// the values of an exploded list are joined with ",". A variable that
	// the URI leaves out is absent. Nil for a fixed resource.
	Variables map[string]string
}

// ReadResourceResult is the result of resources/read.
type ReadResourceResult struct {
	// Contents are the resource's contents: usually one, several for a
	// resource that stands for a group (a directory, say). An entry whose
	// URI is empty gets the URI that was read. Entries must not be nil.
	Contents []*ResourceContents `json:"contents"`
	Meta     Meta                `json:"_meta,omitempty"`

	encoded *skillFile // the static skill file read, whose result is encoded already; nil for others
}

type registeredResource struct {
	res     Resource
	handler ResourceHandler
	order   uint64 // its place in resources/list: the order of first registration
}

type registeredTemplate struct {
	tmpl     ResourceTemplate
	compiled *uritemplate.Template // safe for concurrent Match
	handler  ResourceHandler
	order    uint64 // its place in resources/templates/list: the order of first registration
}

// resourceRegistry holds the resources, the templates, and the sessions'
// subscriptions.
type resourceRegistry struct {
	mu        sync.RWMutex
	byURI     map[string]*registeredResource
	templates []*registeredTemplate     // in the order added, the order they are tried; replaced, never modified, on change
	listed    ordered[Resource]         // in the order first registered, then the skills' by URI; replaced, never modified, on change
	listedT   ordered[ResourceTemplate] // in the order first registered; likewise
	added     uint64                    // resources and templates registered, the order of the last new one
	views     bool                      // some resource is an MCP Apps view (ViewMIMEType)
	skills    *skillSet                 // nil until a skill is registered; replaced, never modified (skills.go)

	subMu sync.Mutex
	subs  map[*Session]map[string]struct{} // URIs each session subscribed to
}

// AddResource registers a resource with a fixed URI, replacing any resource
// of the same URI (which keeps its place: resources/list lists resources in
// the order first registered, then the skills' by URI), and tells
// initialized clients that the resource list changed. It fails for a URI that is not absolute, an empty name or a nil
// handler. It is safe for concurrent use.
func (s *Server) AddResource(r Resource, h ResourceHandler) error {
	if u, err := url.Parse(r.URI); err != nil || u.Scheme == "" {
		return fmt.Errorf("mcp: resource %q: the URI must be absolute", r.URI)
	}
	if r.Name == "" {
		return fmt.Errorf("mcp: resource %q: empty name", r.URI)
	}
	if h == nil {
		return fmt.Errorf("mcp: resource %q: nil handler", r.URI)
	}
	rr := &s.resources
	rr.mu.Lock()
	if rr.byURI == nil {
		rr.byURI = make(map[string]*registeredResource)
	}
	reg := &registeredResource{res: r, handler: h}
	if prev := rr.byURI[r.URI]; prev != nil { // replaced: it keeps its place
		reg.order = prev.order
	} else {
		rr.added++
		reg.order = rr.added
	}
	rr.byURI[r.URI] = reg
	rr.relistLocked()
	rr.mu.Unlock()
	s.listChanged("resources")
	return nil
}

// AddResourceTemplate registers a resource template, replacing any template
// with the same URITemplate (which keeps its place in the matching order,
// the order resources/templates/list lists them in),
// and tells initialized clients that the resource list changed. resources/read
// tries the fixed resources first, then the templates in the order they were
// added; the first match serves the read. AddResourceTemplate fails for a
// template that is not valid RFC 6570, an empty name, a nil handler, or a
// completer for a variable the template does not have. It is safe for
// concurrent use.
func (s *Server) AddResourceTemplate(t ResourceTemplate, h ResourceHandler) error {
	if t.URITemplate == "" {
		return errors.New("mcp: resource template: empty uriTemplate")
	}
	compiled, err := uritemplate.New(t.URITemplate)
	if err != nil {
		return fmt.Errorf("mcp: resource template %q: %w", t.URITemplate, err)
	}
	if t.Name == "" {
		return fmt.Errorf("mcp: resource template %q: empty name", t.URITemplate)
	}
	if h == nil {
		return fmt.Errorf("mcp: resource template %q: nil handler", t.URITemplate)
	}
	vars := compiled.Varnames()
	for name, f := range t.Complete {
		if !slices.Contains(vars, name) {
			return fmt.Errorf("mcp: resource template %q: completer for unknown variable %q", t.URITemplate, name)
		}
		if f == nil {
			return fmt.Errorf("mcp: resource template %q: nil completer for %q", t.URITemplate, name)
		}
	}
	t.Complete = maps.Clone(t.Complete)
	rt := &registeredTemplate{tmpl: t, compiled: compiled, handler: h}
	rr := &s.resources
	rr.mu.Lock()
	templates := slices.Clone(rr.templates) // readers may hold the old slice
	if i := slices.IndexFunc(templates, func(x *registeredTemplate) bool { return x.tmpl.URITemplate == t.URITemplate }); i >= 0 {
		rt.order = templates[i].order
		templates[i] = rt
	} else {
		rr.added++
		rt.order = rr.added
		templates = append(templates, rt)
	}
	rr.templates = templates
	rr.relistLocked()
	rr.mu.Unlock()
	s.listChanged("resources")
	return nil
}

// RemoveResources unregisters the resources with the given URIs and tells
// initialized clients that the resource list changed. It reports how many
// it removed. Subscriptions to them stay: the resource may come back.
func (s *Server) RemoveResources(uris ...string) int {
	rr := &s.resources
	rr.mu.Lock()
	n := 0
	for _, uri := range uris {
		if _, ok := rr.byURI[uri]; ok {
			delete(rr.byURI, uri)
			n++
		}
	}
	if n > 0 {
		rr.relistLocked()
	}
	rr.mu.Unlock()
	if n > 0 {
		s.listChanged("resources")
	}
	return n
}

// RemoveResourceTemplates unregisters the templates with the given
// uriTemplates and tells initialized clients that the resource list
// changed. It reports how many it removed.
func (s *Server) RemoveResourceTemplates(templates ...string) int {
	rr := &s.resources
	rr.mu.Lock()
	before := len(rr.templates)
	rr.templates = slices.DeleteFunc(slices.Clone(rr.templates), func(x *registeredTemplate) bool { // readers may hold the old slice
		return slices.Contains(templates, x.tmpl.URITemplate)
	})
	n := before - len(rr.templates)
	if n > 0 {
		rr.relistLocked()
	}
	rr.mu.Unlock()
	if n > 0 {
		s.listChanged("resources")
	}
	return n
}

// ResourceUpdated tells every client subscribed to uri that the resource
// changed, with notifications/resources/updated: the sessions that called
// resources/subscribe, and the subscriptions/listen streams (2026-07-28)
// that name uri. It does not wait for the notifications to be written. It
// is safe for concurrent use.
func (s *Server) ResourceUpdated(uri string) {
	s.broadcast(broadcastEvent{URI: uri}) // to the other replicas (fanout.go)
	s.resourceUpdatedHere(uri)
}

// resourceUpdatedHere is ResourceUpdated for this replica's clients only.
func (s *Server) resourceUpdatedHere(uri string) {
	params := struct {
		URI string `json:"uri"`
	}{uri}
	s.notifySessions("notifications/resources/updated", params, func(ss *Session) bool {
		return s.resources.subscribed(ss, uri)
	})
	s.notifyListeners("notifications/resources/updated", uri, 0)
}

// relistLocked rebuilds the listed resources and templates, each in the
// order first registered (the skills' resources after the others, by
// URI); rr.mu is held for writing.
func (rr *resourceRegistry) relistLocked() {
	all := slices.SortedFunc(maps.Values(rr.byURI), func(a, b *registeredResource) int { return cmp.Compare(a.order, b.order) })
	rr.listed = ordered[Resource]{items: make([]Resource, 0, len(all)), keys: make([]string, 0, len(all))}
	rr.views = false
	for _, r := range all {
		rr.listed.add(r.res, r.order)
		rr.views = rr.views || r.res.MIMEType == ViewMIMEType
	}
	if rr.skills != nil {
		for _, r := range rr.skills.resources { // sorted by URI
			if rr.byURI[r.URI] == nil { // a fixed resource of the same URI serves it
				rr.listed.items = append(rr.listed.items, r)
				rr.listed.keys = append(rr.listed.keys, skillKey+r.URI) // after every orderKey, by URI
			}
		}
	}
	rr.listedT = ordered[ResourceTemplate]{items: make([]ResourceTemplate, 0, len(rr.templates)), keys: make([]string, 0, len(rr.templates))}
	for _, t := range slices.SortedFunc(slices.Values(rr.templates), func(a, b *registeredTemplate) int { return cmp.Compare(a.order, b.order) }) {
		rr.listedT.add(t.tmpl, t.order)
	}
}

// skillKey begins the key of a skill's resource in resources/list's
// pages: it sorts after every orderKey (hexadecimal digits).
const skillKey = "~"

// resolve finds what serves uri: a fixed resource, else the first template
// that matches (with its variables). Both are nil when nothing does.
func (rr *resourceRegistry) resolve(uri string) (*registeredResource, *registeredTemplate, map[string]string) {
	rr.mu.RLock()
	r := rr.byURI[uri]
	templates := rr.templates
	skills := rr.skills
	rr.mu.RUnlock()
	if r == nil && skills != nil {
		r = skills.resolve(uri)
	}
	if r != nil {
		return r, nil, nil
	}
	for _, t := range templates {
		if vars := matchTemplate(t.compiled, uri); vars != nil {
			return nil, t, vars
		}
	}
	return nil, nil, nil
}

// template returns the template registered as uriTemplate, or nil.
func (rr *resourceRegistry) template(uriTemplate string) *registeredTemplate {
	rr.mu.RLock()
	defer rr.mu.RUnlock()
	for _, t := range rr.templates {
		if t.tmpl.URITemplate == uriTemplate {
			return t
		}
	}
	return nil
}

// matchTemplate returns t's variables in uri, or nil if uri does not match.
func matchTemplate(t *uritemplate.Template, uri string) map[string]string {
	m := t.Match(uri)
	if m == nil {
		return nil
	}
	vars := make(map[string]string, len(m))
	for _, name := range t.Varnames() {
		v := m.Get(name)
		switch {
		case !v.Valid():
		case v.T == uritemplate.ValueTypeString:
			vars[name] = v.String()
		default:
			vars[name] = strings.Join(v.V, ",")
		}
	}
	return vars
}

func (rr *resourceRegistry) hasAny() bool {
	rr.mu.RLock()
	defer rr.mu.RUnlock()
	return len(rr.byURI) > 0 || len(rr.templates) > 0 || rr.skills != nil && len(rr.skills.byPath) > 0
}

// hasCompleters reports whether any template has a completer.
func (rr *resourceRegistry) hasCompleters() bool {
	rr.mu.RLock()
	defer rr.mu.RUnlock()
	return slices.ContainsFunc(rr.templates, func(t *registeredTemplate) bool { return len(t.tmpl.Complete) > 0 })
}

// subscribe subscribes ss to uri; it fails when ss holds as many
// subscriptions, or URI bytes, as a session may (maxSubscriptions).
func (rr *resourceRegistry) subscribe(ss *Session, uri string) error {
	rr.subMu.Lock()
	defer rr.subMu.Unlock()
	if rr.subs == nil {
		rr.subs = make(map[*Session]map[string]struct{})
	}
	set := rr.subs[ss]
	if _, ok := set[uri]; ok {
		return nil
	}
	bytes := len(uri)
	for u := range set {
		bytes += len(u)
	}
	if len(set) >= maxSubscriptions || bytes > maxSubscriptionBytes {
		return Errorf(protocol.CodeInvalidParams, "resources/subscribe: a session may hold %d subscriptions of %d URI bytes in all: unsubscribe first",
			maxSubscriptions, maxSubscriptionBytes)
	}
	if set == nil {
		set = make(map[string]struct{})
		rr.subs[ss] = set
	}
	set[uri] = struct{}{}
	return nil
}

func (rr *resourceRegistry) unsubscribe(ss *Session, uri string) {
	rr.subMu.Lock()
	defer rr.subMu.Unlock()
	delete(rr.subs[ss], uri)
	if len(rr.subs[ss]) == 0 {
		delete(rr.subs, ss)
	}
}

func (rr *resourceRegistry) subscribed(ss *Session, uri string) bool {
	rr.subMu.Lock()
	defer rr.subMu.Unlock()
	_, ok := rr.subs[ss][uri]
	return ok
}

// Subscribed reports whether the session is subscribed to uri with
// resources/subscribe (false once it ended), without copying its
// subscriptions as Subscriptions does. It is safe for concurrent use.
func (ss *Session) Subscribed(uri string) bool { return ss.srv.resources.subscribed(ss, uri) }

// Subscriptions returns the URIs the session subscribed to with
// resources/subscribe, sorted; none once the session ended. It is safe for
// concurrent use.
func (ss *Session) Subscriptions() []string {
	rr := &ss.srv.resources
	rr.subMu.Lock()
	defer rr.subMu.Unlock()
	return slices.Sorted(maps.Keys(rr.subs[ss]))
}

// unsubscribeAll drops a session's subscriptions when it ends, after its
// last handler returned.
func (s *Server) unsubscribeAll(ss *Session) {
	rr := &s.resources
	rr.subMu.Lock()
	defer rr.subMu.Unlock()
	delete(rr.subs, ss)
}

// registerResources registers the resources/* methods.
func (s *Server) registerResources() {
	s.handle("resources/list", s.listResources)
	s.handle("resources/templates/list", s.listResourceTemplates)
	s.handle("resources/read", s.readResource)
	s.handle("resources/subscribe", s.subscribeResource)
	s.handle("resources/unsubscribe", s.unsubscribeResource)
	s.handle("resources/directory/read", s.readDirectory) // skills_methods.go
	s.handle("skills/list", s.listSkills)
	s.handle("skills/get", s.getSkill)
}

// decodeListParams reads the params of a paginated list request.
func decodeListParams(req *Request) (listParams, error) {
	var p listParams
	if len(req.Params) > 0 {
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return p, Errorf(protocol.CodeInvalidParams, "invalid %s params: %v", req.Method, err)
		}
	}
	return p, nil
}

func (s *Server) listResources(_ context.Context, req *Request) (any, error) {
	page, next, err := listPage(s, req, &s.resources.mu, &s.resources.listed, itemFilter(s, req, ItemResource, func(r Resource) string { return r.URI }))
	if err != nil {
		return nil, err
	}
	return struct {
		Resources  []Resource `json:"resources"`
		NextCursor string     `json:"nextCursor,omitempty"`
	}{page, next}, nil
}

func (s *Server) listResourceTemplates(_ context.Context, req *Request) (any, error) {
	page, next, err := listPage(s, req, &s.resources.mu, &s.resources.listedT, itemFilter(s, req, ItemResourceTemplate, func(t ResourceTemplate) string { return t.URITemplate }))
	if err != nil {
		return nil, err
	}
	return struct {
		ResourceTemplates []ResourceTemplate `json:"resourceTemplates"`
		NextCursor        string             `json:"nextCursor,omitempty"`
	}{page, next}, nil
}

// uriParam reads params.uri of resources/read, subscribe and unsubscribe.
func uriParam(req *Request) (string, error) {
	var p struct {
		URI *string `json:"uri"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.URI == nil || *p.URI == "" {
		return "", Errorf(protocol.CodeInvalidParams, "%s: params must be an object with a uri string", req.Method)
	}
	if _, err := url.Parse(*p.URI); err != nil {
		return "", Errorf(protocol.CodeInvalidParams, "%s: invalid uri", req.Method)
	}
	return *p.URI, nil
}

// resourceNotFound is the error for a URI nothing serves, in the code of
// req's protocol version.
func resourceNotFound(req *Request, uri string) *Error {
	code := protocol.CodeResourceNotFound
	if req.Protocol >= protocol.Version20260728 { // versions are dates: they compare as strings
		code = protocol.CodeInvalidParams
	}
	data, _ := json.Marshal(struct { // a string always marshals
		URI string `json:"uri"`
	}{uri})
	return &Error{Code: code, Message: "Resource not found", Data: data, err: ErrResourceNotFound}
}

func (s *Server) readResource(ctx context.Context, req *Request) (any, error) {
	req.maxResult = resultBound(s.cfg.maxResultBytes)
	uri, err := uriParam(req)
	if err != nil {
		return nil, err
	}
	r, t, vars := s.resources.resolve(uri)
	if r == nil && t == nil {
		found, err := s.findSkill(ctx, uri) // the SKILL.md of a skill the finder knows (skill_finder.go)
		if err != nil {
			return nil, err
		}
		if found {
			r, t, vars = s.resources.resolve(uri)
		}
	}
	if !s.resourceShown(req, uri, r, t) {
		return nil, resourceNotFound(req, uri) // hidden: as unknown, the fallback not asked
	}
	rreq := &ReadResourceRequest{Request: req, URI: uri, Variables: vars}
	var h ResourceHandler
	fallback := s.resourceFallback.Load() // resource_fallback.go
	switch {
	case r != nil:
		h = r.handler
	case t != nil:
		h, rreq.Template = t.handler, t.tmpl.URITemplate
	case fallback != nil:
		h = *fallback
	default:
		return nil, resourceNotFound(req, uri)
	}
	res, err := h(ctx, rreq)
	if err != nil {
		if _, ok := errors.AsType[*Error](err); !ok && errors.Is(err, ErrResourceNotFound) {
			return nil, resourceNotFound(req, uri)
		}
		return nil, err
	}
	if res == nil {
		res = &ReadResourceResult{}
	}
	if res.Contents == nil {
		res.Contents = []*ResourceContents{}
	}
	for i, c := range res.Contents {
		if c == nil {
			req.Session.logger().ErrorContext(ctx, "invalid resources/read result", "uri", uri, "error", fmt.Sprintf("contents[%d] is nil", i))
			return nil, fmt.Errorf("mcp: resource %q: contents[%d] is nil", uri, i)
		}
		if c.URI == "" {
			c.URI = uri
		}
	}
	return res, nil
}

func (s *Server) subscribeResource(ctx context.Context, req *Request) (any, error) {
	uri, err := uriParam(req)
	if err != nil {
		return nil, err
	}
	if r, t, _ := s.resources.resolve(uri); r == nil && t == nil || !s.resourceShown(req, uri, r, t) {
		return nil, resourceNotFound(req, uri) // hidden (item_view.go): as unknown
	}
	if err := s.resources.subscribe(req.Session, uri); err != nil {
		return nil, err
	}
	if sub := s.resourceSubscriber(); sub != nil {
		if err := sub.Subscribe(ctx, uri); err != nil {
			s.resources.unsubscribe(req.Session, uri)
			return nil, err
		}
	}
	req.Session.storeShared(req.ArrivalContext())
	return struct{}{}, nil
}

func (s *Server) unsubscribeResource(ctx context.Context, req *Request) (any, error) {
	uri, err := uriParam(req)
	if err != nil {
		return nil, err
	}
	s.resources.unsubscribe(req.Session, uri)
	req.Session.storeShared(req.ArrivalContext())
	if sub := s.resourceSubscriber(); sub != nil {
		if err := sub.Unsubscribe(ctx, uri); err != nil {
			return nil, err
		}
	}
	return struct{}{}, nil
}
