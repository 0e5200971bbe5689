package gateway

import (
	"context"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// endpointKey is the context key of the endpoint a request came through.
type endpointKey struct{}

// endpointOf returns the endpoint ctx's request came through; nil: the
// default one, which serves everything.
func endpointOf(ctx context.Context) *endpointSpec {
	e, _ := ctx.Value(endpointKey{}).(*endpointSpec)
	return e
}

// Endpoints returns the handler of the catalog's named endpoints in front
// of next, the MCP endpoint's handler: a request whose path ends in NAME
// (mount it at /mcp/, so that /mcp/NAME is served) is served by next as
// a request of the endpoint NAME of the catalog in force when it arrives:
// its callers list, and may call, only the tools the endpoint selects
// (tools/call of another is a call of an unknown tool). A request of a
// name the catalog does not have is answered 404. When the endpoint
// requires scopes, a request whose principal ([auth.PrincipalFromContext],
// so put it behind the OAuth guard) lacks one, or that has none, is
// refused 403 insufficient_scope naming them, before next sees it.
func (g *Gateway) Endpoints(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := path.Base(r.URL.Path)
		c := g.catalog.Load()
		var e *endpointSpec
		if c != nil {
			e = c.endpoints[name]
		}
		if e == nil {
			writeRPCError(w, http.StatusNotFound, protocol.CodeInvalidRequest, "no such MCP endpoint")
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
				writeRPCError(w, http.StatusForbidden, protocol.CodeInvalidRequest, "insufficient_scope: this endpoint needs the scopes "+strings.Join(missing, " "))
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), endpointKey{}, e)))
	})
}

// writeRPCError answers with a JSON-RPC error object with a null id, as
// the OAuth guard does.
func writeRPCError(w http.ResponseWriter, status int, code protocol.Code, msg string) {
	body, _ := transport.AppendMessage(nil, &transport.Response{Error: &transport.Error{Code: int64(code), Message: msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
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

// globMatches reports whether the path.Match glob matches name.
func globMatches(glob, name string) bool {
	ok, _ := path.Match(glob, name)
	return ok
}
