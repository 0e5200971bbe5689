// Package auth makes a Vigil server an OAuth 2.1 resource server, as the
// MCP authorization specification asks of an HTTP server that restricts
// access: it publishes RFC 9728 Protected Resource Metadata, challenges
// with RFC 6750 WWW-Authenticate headers, accepts only bearer tokens issued
// for its own resource URI (RFC 8707 audience) in the Authorization header,
// and answers a missing scope with 403 insufficient_scope so that a client
// can step up (or, with Config.HideTools, a call of a tool the caller may
// not call as a call of an unknown tool, for tool names that are secret).
//
// A [Verifier] turns a bearer token into a [Principal]: [NewJWTVerifier]
// checks JWT access tokens against the authorization server's JWKS (found
// by RFC 8414 / OpenID discovery, refreshed in the background, refetched
// on an unknown key id), and [NewIntrospectionVerifier] asks the
// authorization server about opaque tokens (RFC 7662). Both cache what they
// verified, keyed by the token's SHA-256, so a steady client costs a hash
// and a map lookup per request.
//
// A [ResourceServer] ([New]) guards the MCP endpoint: its
// [ResourceServer.Handler] answers 401, 403, 400 or 503 with the right
// challenge and counts each refusal in mcp_server_auth_failures_total; its
// [ResourceServer.MetadataHandler] serves the metadata at
// [ResourceServer.MetadataPaths]. The server side takes four functions:
// [Middleware] (server.WithMiddleware) puts the principal into handlers'
// contexts, [ToolAccess] (server.WithToolAccess) shows and lets a principal
// call only the tools whose server.Tool.Scopes it holds, [CallerKey]
// (server.WithCallerKey) binds each task to the principal that created it
// (both read the principal of the request at hand, and fail closed on a
// request without one),
// and [SessionPrincipal] (streamable.WithPrincipal) binds each 2025 session
// to the principal that opened it.
//
// Handlers never see the token: they read the caller with [PrincipalFromContext].
package auth
