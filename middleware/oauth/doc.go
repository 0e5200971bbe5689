// Package oauth makes a Vigil server an OAuth 2.1 resource server, as the
// MCP authorization specification asks of an HTTP server that restricts
// access: it publishes RFC 9728 Protected Resource Metadata, challenges
// with RFC 6750 WWW-Authenticate headers, accepts only bearer tokens issued
// for its own resource URI (RFC 8707 audience) in the Authorization header,
// and answers a missing scope with 403 insufficient_scope so that a client
// can step up (or, with Config.HideTools, a call of a tool the caller may
// not call as a call of an unknown tool, for tool names that are secret).
//
// A [Verifier] turns a bearer token into an [auth.Principal] (package
// middleware/auth, which links none of this). [NewVerifier] makes one of
// a [VerifierConfig]: with an IntrospectionEndpoint (or a ClientID at the
// discovered one) it asks the authorization server about each token
// (RFC 7662); otherwise it checks JWT access tokens against the
// authorization server's JWKS (found by RFC 8414 / OpenID discovery,
// refreshed in the background, refetched on an unknown key id). Either
// way it caches what it verified, keyed by the token's SHA-256, so a
// steady client costs a hash and a map lookup per request.
//
// A [ResourceServer] ([New]) guards the MCP endpoint: its
// [ResourceServer.Endpoint] makes the streamable Endpoint behind the guard
// and the guarded handler to serve it with; [ResourceServer.Handler]
// guards any handler. The guard answers 401, 403, 400 or 503 with the right
// challenge and counts each refusal in mcp_server_auth_failures_total; its
// [ResourceServer.MetadataHandlers] serve the metadata. The server side
// takes four functions:
// [auth.Middleware] (server.WithMiddleware) puts the principal into handlers'
// contexts, [auth.ToolAccess] (server.WithToolAccess) shows and lets a principal
// call only the tools whose server.Tool.Scopes it holds, [auth.CallerKey]
// (server.WithCallerKey) binds each task to the principal that created it
// (both read the principal of the request at hand, and fail closed on a
// request without one),
// and [auth.SessionPrincipal] (streamable.WithPrincipal) binds each 2025 session
// to the principal that opened it.
//
// Handlers never see the token: they read the caller with
// [auth.PrincipalFromContext], and the actors of a delegated token (its
// RFC 8693 act chain) in [auth.Principal.Actors]. A handler that calls
// another service on the caller's behalf asks [Exchanger.Exchange] for a
// token of that service's audience: [ResourceServer.Exchanger] keeps each
// verified request's token out of handlers' reach, and RFC 8693 token
// exchange sends it to the authorization server's token endpoint only.
//
// With [Config.DPoP] ([DPoPConfig]) the guard also accepts DPoP-bound
// tokens (RFC 9449): Authorization: DPoP with a DPoP proof header, checked
// as RFC 9449 §4.3 says (typ, an asymmetric alg, the signature by its
// jwk, htm, htu against Config.Resource, iat, ath, the token's cnf.jkt,
// and a jti accepted once: in memory, or in a store every replica shares),
// with optional server nonces. A token bound to a key (cnf.jkt, which the
// verifiers put in [auth.Principal.KeyThumbprint]) presented as Bearer is
// refused whether or not DPoP is configured.
//
// # The guard's answers
//
// [ResourceServer.Handler] answers:
//
//   - 400 error="invalid_request" for two Authorization headers or a token
//     in the URL query or a form-encoded body (counted invalid_token);
//   - 401 without an error code when there is no bearer token, naming
//     Config.Scopes and Config.RequestScopes' in scope
//     (missing_token), and 401 error="invalid_token" for a malformed,
//     oversized or refused token (with the verifier's reason);
//   - with DPoP, 401 with a DPoP challenge error="invalid_dpop_proof" for a
//     proof that fails a check (invalid_dpop_proof), or error="use_dpop_nonce"
//     and a DPoP-Nonce header for one without the server's nonce
//     (use_dpop_nonce); a bound token under Bearer is 401 invalid_token;
//   - 503 with Retry-After when the verifier cannot decide (verifier_error)
//     or would not ask now (verifier_busy, Retry-After 1);
//   - 403 error="insufficient_scope" naming every scope the operation needs
//     (Config.Scopes, Config.RequestScopes', plus those of each tool a
//     tools/call names, batches included) when the principal lacks one;
//     with Config.HideTools, only for a lack of Config.Scopes and
//     Config.RequestScopes', which it then names alone;
//   - 413 when a body that must be read to find its tools is over
//     Config.MaxBodyBytes (not an authorization failure: not counted).
//
// Behind [ResourceServer.Endpoint], which hands the Endpoint what the
// guard needs as an option when it is made (streamable.WithGuard), the
// tools a 2025 POST calls are checked by the Endpoint on the message it
// decodes, rather than by reading and parsing the body here once more; the
// Endpoint then refuses, after its own checks, what it would refuse anyway
// (a bad Content-Type, a body over its limit). A request it forwards to
// another replica is authorized there by the assertion of its principal,
// and refused without one.
//
// # The connection memo
//
// A client on a keep-alive connection sends the same token with every
// request (MCP clients do). streamable.ConnContext, as the http.Server's
// ConnContext (vigil.Service sets it), gives each connection a memo of
// one token, the one its client presented last and presents again with
// each request, in memory only and for as long as the connection is open.
// It is compared in full, so a connection shared by several clients
// (behind a proxy) gains nothing a client did not prove. Without it
// every verification goes through the cache, as it does for a
// verifier whose cache is disabled.
package oauth
