// Package paramheader checks the Mcp-Param-* headers of a 2026-07-28
// tools/call (SEP-2243) against the arguments they mirror. The Streamable
// HTTP transport puts a request's headers on the context it serves the
// request with (a [Carrier]); the server, which knows the tools' input
// schemas, checks them at admission ([Check]).
package paramheader
