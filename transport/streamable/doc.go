// Package streamable is the MCP Streamable HTTP transport: an
// [http.Handler] serving one MCP endpoint (POST, GET and DELETE) for every
// protocol generation at once, choosing the era per request:
//
//   - 2025-era sessions (initialize, then Mcp-Session-Id on every request):
//     each session is a [transport.Conn] fed by POST bodies. A response
//     travels on the POST that carried its request; messages a handler sends
//     for a request (progress, logs, server-to-client requests) travel on
//     that request's stream; other notifications on the session's GET stream.
//   - 2026-07-28 stateless requests (MCP-Protocol-Version: 2026-07-28, the
//     version and client capabilities in _meta): every POST is a session of
//     its own that ends with its response. Closing the response stream
//     cancels the request.
//
// Response mode: a request answers with application/json unless a message
// for it comes before its response, in which case the response becomes an
// SSE stream carrying those messages and then the response ([WithResponseMode]
// forces one mode). Disconnect policy: a POST whose client goes away before
// the answer has its handler cancelled with the transport-close cause, since
// the answer can no longer be delivered; DELETE and idle expiry end the
// session the same way and never wait for handlers.
//
// The package needs only something that serves a Conn ([Server]); the
// server package's *Server is one. It imports no other Vigil package.
package streamable
