package auth

import (
	"context"
	"net/http"

	"github.com/vigil-mcp/vigil/server"
)

// noPrincipalKey is the CallerKey of a request without a principal: no
// principal's key (those start with a length), nor "" (the anonymous
// caller of a server without authorization).
const noPrincipalKey = "-no-principal"

// CallerKey returns the [Principal.Key] of req's principal (from its
// arrival context, where oauth.ResourceServer.Handler put it for this very
// request): give it to server.WithCallerKey on a server behind a
// ResourceServer, so that a task answers only the principal that created
// it. 2026-07-28 tasks belong to no session: without it, anyone holding a
// task's id could read its result. It fails closed: a request without a
// principal gets a key that is no principal's and not "", so that it
// reaches no task of a principal nor of an anonymous caller (and with
// [ToolAccess] it creates none). It is not a rate limit key: read the
// principal with [PrincipalFromContext] for that.
func CallerKey(req *server.Request) string {
	if p, ok := PrincipalFromContext(req.ArrivalContext()); ok {
		return p.Key()
	}
	return noPrincipalKey
}

// SessionPrincipal returns the key of the principal of r, "" without one:
// give it to streamable.WithPrincipal to bind each session to the
// principal that opened it (a refreshed token of the same principal keeps
// the session).
func SessionPrincipal(r *http.Request) string { return keyFrom(r.Context()) }

// Middleware returns a server middleware that puts the principal of each
// request's arrival context (where oauth.ResourceServer.Handler put it) into
// the handler's context, so that handlers can call [PrincipalFromContext]. A
// request whose arrival context has none gets none either, not the one of
// the request that opened its session, whose context the session's is.
func Middleware() server.Middleware {
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if p, ok := PrincipalFromContext(req.ArrivalContext()); ok {
				ctx = ContextWithPrincipal(ctx, p)
			} else if _, stale := PrincipalFromContext(ctx); stale {
				ctx = ContextWithPrincipal(ctx, nil)
			}
			return next(ctx, req)
		}
	}
}

// ToolAccess reports whether req's principal, the one oauth.ResourceServer.Handler
// verified for this very request, holds the scopes t needs (t.Scopes): give
// it to server.WithToolAccess on a server behind a ResourceServer, so that
// tools/list shows a principal only the tools it may call, and a task's
// result only a principal that may call its tool. The scopes every request
// needs are the guard's to check. It fails closed: a request without a
// principal (one that did not pass the guard: another transport such as
// stdio, a misconfigured chain, a forged relay) sees no tool and calls
// none, whatever its scopes.
func ToolAccess(req *server.Request, t *server.Tool) bool {
	p, ok := PrincipalFromContext(req.ArrivalContext())
	return ok && p.HasScopes(t.Scopes...)
}
