// Package auth carries who a request speaks for: the [Principal] a
// verified token names, in the request's context ([ContextWithPrincipal],
// [PrincipalFromContext]), and the server options that bind tasks and
// tool access to it ([CallerKey], [ToolAccess], [Middleware],
// [SessionPrincipal]). It verifies nothing and imports no OAuth, JWT or
// Redis library, so that middleware and handlers can read the principal
// without linking them; the OAuth 2.1 resource server that verifies
// tokens and puts the principal there is package
// github.com/vigil-mcp/vigil/middleware/oauth.
package auth
