package gateway

import (
	"context"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// endpointKey is the context key of the endpoint a request came through.
type endpointKey struct{}

// endpointOf returns the endpoint ctx's request came through; nil: the
// default one, which serves everything.
func endpointOf(ctx context.Context) *endpointSpec {
	e, _ := ctx.Value(endpointKey{}).(*endpointSpec)
	return e
}

// EndpointScopes returns the scopes the catalog in force requires at the
// endpoint r's path names, as Endpoints reads it (its last element, NAME
// of /mcp/NAME); none for a name the catalog does not have. It is the
// OAuth guard's oauth.Config.RequestScopes of the handler in front of
// Endpoints, so that the guard refuses a principal without them 403
// insufficient_scope with its own challenge (resource_metadata, DPoP),
// counted among its refusals. It is safe for concurrent use.
func (g *Gateway) EndpointScopes(r *http.Request) []string {
	if e := g.endpointNamed(path.Base(r.URL.Path)); e != nil {
		return e.scopes
	}
	return nil
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

// Endpoints returns the handler of the catalog's named endpoints in front
// of next, the MCP endpoint's handler: a request whose path ends in NAME
// (mount it at /mcp/, so that /mcp/NAME is served) is served by next as
// a request of the endpoint NAME of the catalog in force when it arrives:
// its callers list, and may call, only the tools the endpoint selects
// (tools/call of another is a call of an unknown tool). A request of a
// name the catalog does not have is answered 404. When the endpoint
// requires scopes, a request whose principal ([auth.PrincipalFromContext])
// lacks one, or that has none, is refused 403 insufficient_scope naming
// them, before next sees it: put Endpoints behind the OAuth guard, with
// EndpointScopes its oauth.Config.RequestScopes, and the guard refuses
// such a request first, with its own challenge; this refusal stays for
// the request that met a catalog reloaded between the two, or no guard.
func (g *Gateway) Endpoints(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := g.endpointNamed(path.Base(r.URL.Path))
		if e == nil {
			streamable.WriteError(w, http.StatusNotFound, protocol.CodeInvalidRequest, "no such MCP endpoint")
			return
		}
		if len(e.scopes) > 0 {
			p, ok := auth.PrincipalFromContext(r.Context())
			var missing []string
			if ok {
				missing = p.Missing(e.scopes)
			} else {
				missing = e.scopes
			}
			if len(missing) > 0 {
				w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+strings.Join(e.scopes, " ")+`"`)
				streamable.WriteError(w, http.StatusForbidden, protocol.CodeInvalidRequest, "insufficient_scope: this endpoint needs the scopes "+strings.Join(missing, " "))
				return
			}
		}
		ctx := metrics.ContextWithEndpoint(context.WithValue(r.Context(), endpointKey{}, e), e.name) // the request duration's endpoint label
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// servesTool reports whether the endpoint e serves the upstream's tool
// own with tags: a selector names its upstream and a glob that matches
// own, or one of its tags.
func (e *endpointSpec) servesTool(upstream, own string, tags []string) bool {
	for _, s := range e.tools {
		if s.tag != "" && slices.Contains(tags, s.tag) || s.upstream == upstream && globMatches(s.glob, own) {
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
// default endpoint serves every one.
func (g *Gateway) showsItem(req *server.Request, kind, key string) bool {
	e := endpointOf(req.ArrivalContext())
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
