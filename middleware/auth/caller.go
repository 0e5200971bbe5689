package auth

import "github.com/vigil-mcp/vigil/server"

// noPrincipalKey is the CallerKey of a request without a principal: no
// principal's key (those start with a length), nor "" (the anonymous
// caller of a server without authorization).
const noPrincipalKey = "-no-principal"

// CallerKey returns the [Principal.Key] of req's principal (from its
// arrival context, where [ResourceServer.Handler] put it for this very
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
