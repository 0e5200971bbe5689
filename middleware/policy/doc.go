// Package policy decides each tools/call with a per-tool policy written in
// CEL (https://cel.dev), over who calls, which tool, with which arguments
// and how: the variables are
//
//   - principal: subject, issuer, client_id, scopes (a list), claims (a
//     map: the claims the verifier keeps), actor (the subjects of the
//     token's act chain, outermost first);
//   - tool: name, annotations (a map of the tool's annotations that are
//     set: title, readOnlyHint, destructiveHint, idempotentHint,
//     openWorldHint);
//   - arguments: the call's arguments, decoded (an integer is an int, any
//     other number a double);
//   - request: era ("2025" for a session of the 2025 revisions, "2026" for
//     a stateless 2026-07-28 request), transport ("streamable_http",
//     "stdio", ...), session (its id, "" without one).
//
// [New] compiles and type-checks every expression, so that a typo fails
// the start, not a call. [Set.ToolPolicy], given to server.WithToolPolicy, runs
// after the call's arguments were validated and before the handler: a
// denied call is answered with the JSON-RPC error SEP-2643 proposes for
// an authorization denial (code -32600, as Vigil's other authorization
// refusals, until the SEP assigns one; data.authorization.reason
// "insufficient_authorization", data.policy the policy's name), counted
// in mcp_server_policy_decisions_total, set on the call's span, logged and
// audited. [Set.ToolAccess], composed with auth.ToolAccess in
// server.WithToolAccess, hides from tools/list the tools whose policy
// denies the caller without reading the arguments.
//
// Before a policy that reads arguments runs, arguments whose member names
// a handler decoding them into a struct with encoding/json could read
// otherwise (a name that folds to a property the input schema declares
// but is not it, two names of one object that fold alike) are refused
// with -32602 and counted as the policy's denials (see [Set.ToolPolicy]).
//
// A request without a principal (no authorization, or one that did not
// pass the guard) is denied by every policy: policies fail closed.
package policy
