package auth

import "github.com/vigil-mcp/vigil/server"

// CallerKey returns the [Principal.Key] of req's principal (from its
// arrival context, where [ResourceServer.Handler] put it), "" without one:
// give it to server.WithCallerKey, so that a task answers only the
// principal that created it. 2026-07-28 tasks belong to no session: without
// it, anyone holding a task's id could read its result.
func CallerKey(req *server.Request) string { return keyFrom(req.ArrivalContext()) }
