package gateway

import (
	"context"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/vigil-mcp/vigil/gateway/internal/openapi"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// endpointKey is the context key of the endpoint a request came through.
type endpointKey struct{}

// endpointOf returns the named endpoint ctx's request came through; nil:
// the default one (endpointAt).
func endpointOf(ctx context.Context) *endpointSpec {
	e, _ := ctx.Value(endpointKey{}).(*endpointSpec)
	return e
}

// endpointAt returns the endpoint whose selection serves req: the named
// endpoint it came through, else the default endpoint of the catalog in
// force; nil: everything (no catalog, or its default is all).
func (g *Gateway) endpointAt(req *server.Request) *endpointSpec {
	if e := endpointOf(req.ArrivalContext()); e != nil {
		return e
	}
	if c := g.catalog.Load(); c != nil {
		return c.def
	}
	return nil
}

// defaultPath is the path of the default endpoint, the MCP endpoint's
// own; the named ones are defaultPath/NAME.
const defaultPath = "/mcp"

// EndpointScopes returns the scopes the catalog in force requires at the
// endpoint r's path names, as Endpoints reads it: /mcp is the default
// endpoint, any other path names the endpoint of its last element (NAME
// of /mcp/NAME); none for a name the catalog does not have. It is the
// OAuth guard's oauth.Config.RequestScopes of the handler in front of
// Endpoints, so that the guard refuses a principal without them 403
// insufficient_scope with its own challenge (resource_metadata, DPoP),
// counted among its refusals. It is safe for concurrent use.
func (g *Gateway) EndpointScopes(r *http.Request) []string {
	if e, _ := g.endpointFor(r.URL.Path); e != nil {
		return e.scopes
	}
	return nil
}

// endpointFor returns the endpoint of the catalog in force at p (see
// EndpointScopes): nil when it serves everything; ok is false for a name
// the catalog does not have.
func (g *Gateway) endpointFor(p string) (e *endpointSpec, ok bool) {
	if p == defaultPath {
		if c := g.catalog.Load(); c != nil {
			return c.def, true
		}
		return nil, true
	}
	e = g.endpointNamed(path.Base(p))
	return e, e != nil
}

// AllEndpointScopes returns the scopes the catalog in force requires at
// any of its endpoints, sorted, each once: what an OAuth guard's
// metadata advertises in scopes_supported (RFC 9728) besides its own.
func (g *Gateway) AllEndpointScopes() []string {
	c := g.catalog.Load()
	if c == nil {
		return nil
	}
	var all []string
	for _, e := range c.endpoints {
		all = append(all, e.scopes...)
	}
	if c.def != nil { // the default endpoint's (the catalog's default key)
		all = append(all, c.def.scopes...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// endpointNamed returns the catalog's endpoint name; nil when the
// catalog in force has none of that name.
func (g *Gateway) endpointNamed(name string) *endpointSpec {
	if c := g.catalog.Load(); c != nil {
		return c.endpoints[name]
	}
	return nil
}

// Endpoints returns the handler of the catalog's endpoints in front of
// next, the MCP endpoint's handler: mounted at /mcp/, a request of
// /mcp/NAME is served by next as one of the endpoint NAME of the catalog
// in force (its callers list and call only the tools it selects; another
// is an unknown tool), one of a NAME the catalog lacks answered 404;
// mounted at /mcp too, a request there is the default endpoint's: 404
// when the catalog turns it off, else next serves it with the default's
// selection (every request of no named endpoint gets it, stdio's too).
// A request whose principal ([auth.PrincipalFromContext]) lacks one of
// the endpoint's scopes, or that has none, is refused 403
// insufficient_scope naming them: put Endpoints behind the OAuth guard,
// EndpointScopes its oauth.Config.RequestScopes, and the guard refuses it
// first, with its own challenge; this refusal stays for a request that
// met a catalog reloaded between the two, or no guard.
func (g *Gateway) Endpoints(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, ok := g.endpointFor(r.URL.Path)
		switch {
		case !ok:
			streamable.WriteError(w, http.StatusNotFound, protocol.CodeInvalidRequest, "no such MCP endpoint")
			return
		case e != nil && e.off:
			streamable.WriteError(w, http.StatusNotFound, protocol.CodeInvalidRequest, "the gateway's catalog serves no tools at "+defaultPath+": use one of its endpoints, "+defaultPath+"/NAME")
			return
		case e != nil && !scopesHeld(w, r, e):
			return
		case r.URL.Path == defaultPath:
			next.ServeHTTP(w, r) // with the default endpoint's selection (endpointAt)
			return
		}
		ctx := metrics.ContextWithEndpoint(context.WithValue(r.Context(), endpointKey{}, e), e.name) // the request duration's endpoint label
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// scopesHeld reports whether r's principal holds the scopes of the
// endpoint e; if not, it answers 403 insufficient_scope naming them.
func scopesHeld(w http.ResponseWriter, r *http.Request, e *endpointSpec) bool {
	if len(e.scopes) == 0 {
		return true
	}
	missing := e.scopes
	if p, ok := auth.PrincipalFromContext(r.Context()); ok {
		missing = p.Missing(e.scopes)
	}
	if len(missing) == 0 {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+strings.Join(e.scopes, " ")+`"`)
	streamable.WriteError(w, http.StatusForbidden, protocol.CodeInvalidRequest, "insufficient_scope: this endpoint needs the scopes "+strings.Join(missing, " "))
	return false
}

// servesTool reports whether the endpoint e serves the upstream's tool
// own with tags: a selector names its upstream and a glob that matches
// own, or one of its tags; or, op being the tool's operation on an
// OpenAPI upstream (else nil), names its upstream and picks op
// (restpick.go).
func (e *endpointSpec) servesTool(upstream, own string, tags []string, op *openapi.Tool) bool {
	for _, s := range e.tools {
		if s.tag != "" && slices.Contains(tags, s.tag) || s.upstream == upstream && (s.glob != "" && globMatches(s.glob, own) || s.picksOperation(op)) {
			return true
		}
	}
	return false
}

// itemEntry is the upstream and own name (the URI, the URI template) of
// a registered prompt, resource or template.
type itemEntry struct{ upstream, own string }

// indexItems records which upstream serves each registered prompt,
// resource and template, for showsItem; g.mu is held.
func (g *Gateway) indexItems() {
	idx := map[string]itemEntry{}
	for _, m := range g.mounts {
		if m.cat == nil {
			continue
		}
		for i, p := range m.cat.prompts {
			idx[server.ItemPrompt+" "+p.Name] = itemEntry{m.up.Name, m.cat.promptOf[i]}
		}
		for _, r := range m.cat.resources {
			idx[server.ItemResource+" "+r.URI] = itemEntry{m.up.Name, r.URI}
		}
		for _, t := range m.cat.templates {
			idx[server.ItemResourceTemplate+" "+t.URITemplate] = itemEntry{m.up.Name, t.URITemplate}
		}
	}
	g.itemIndex.Store(&idx)
}

// showsItem is the server's item view (server.Server.SetItemView): at a
// catalog's endpoint, only the upstreams' prompts its prompts selectors
// select and the resources and templates its resources selectors select
// (by upstream and a glob of the prompt's own name, of the URI or URI
// template); a resource no upstream lists is not served there. The
// default endpoint serves every one, unless the catalog says what it
// serves (endpointAt).
func (g *Gateway) showsItem(req *server.Request, kind, key string) bool {
	e := g.endpointAt(req)
	if e == nil {
		return true
	}
	idx := g.itemIndex.Load()
	if idx == nil {
		return false
	}
	it, ok := (*idx)[kind+" "+key]
	if !ok {
		return false
	}
	sels := e.resources
	if kind == server.ItemPrompt {
		sels = e.prompts
	}
	for _, s := range sels {
		if s.tag == "" && s.upstream == it.upstream && globMatches(s.glob, it.own) {
			return true
		}
	}
	return false
}

// globMatches reports whether the path.Match glob matches name.
func globMatches(glob, name string) bool {
	ok, _ := path.Match(glob, name)
	return ok
}

// EndpointNames returns the names of the named endpoints of the catalog
// in force (served at /mcp/NAME), sorted, and whether its default
// endpoint, /mcp, serves (false when the catalog turns it off): what
// discovery lists, one Server Card each. Without a catalog there are no
// names and /mcp serves. It is safe for concurrent use.
func (g *Gateway) EndpointNames() (names []string, defaultServes bool) {
	c := g.catalog.Load()
	if c == nil {
		return nil, true
	}
	for name := range c.endpoints {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, c.def == nil || !c.def.off
}
