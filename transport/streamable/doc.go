// Package streamable is the MCP Streamable HTTP transport: an [Endpoint],
// the [http.Handler] serving one MCP endpoint (POST, GET and DELETE) for every
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
// Resumability (2025 era) is on when the Endpoint has an [EventStore]
// ([WithEventStore]; the default Endpoint has none, hence the "cancel"
// policy above). Every SSE event then has an id; a POST answered with SSE
// starts with a priming event (an id, a retry field and empty data), and its
// disconnect policy becomes "keep running, replay": once the client has an
// event id, its going away does not cancel the handler; the messages for
// the request and its response are stored, and a GET with Last-Event-ID
// replays the events of that stream after that id (never another stream's)
// and then carries the stream on until its response. A GET with the id of
// a standalone-stream event resumes the standalone stream. A resumption
// takes the stream over from any HTTP response still carrying it. An id the
// store does not know in the session is answered 400 (not 404, which would
// tell the client its session is gone). [CloseSSEStream] closes a request's
// stream from the server's side ("polling"). A POST answered with JSON
// before any event, and a stream whose request the client cancelled, keep
// the "cancel" policy.
//
// Slow readers and abandoned sessions: every SSE write, and the writing
// of a JSON answer, must complete within the write timeout
// ([WithWriteTimeout]), or the stream ends (the session lives on); a
// session has at most a few GET streams open at once
// ([WithMaxResumptions]); one whose client never finishes initialize
// expires after the init timeout ([WithInitTimeout]); a shared session's
// state is capped ([WithMaxStateBytes]). These cuts are reported to
// [WithStreamCutHook].
//
// Every message of a session is routed to its stream the same way,
// whether the session is resumable or not. Refusals are reported to
// [WithRejectHook] with a typed protocol.RejectReason.
//
// The client side is [Dial]: a [transport.Conn] to a Streamable HTTP
// endpoint, configured by a [ClientConfig], in both eras (a session id,
// the GET stream, streams resumed with Last-Event-ID; the 2026-07-28
// headers), every message the server sends bounded. Its connections may
// share one pool ([NewHTTPClient]). It is the one MCP client core of the
// module: Vigil's gateway speaks to HTTP upstreams with it, and tests
// drive endpoints with it through server/mcptest's NewClient.
//
// The package needs only something that serves a Conn ([Server]); the
// server package's *Server is one. It imports transport, transport/protocol,
// transport/stdio (for the client's default bound on a message) and
// internal leaf packages (the Mcp-Param-* headers the server checks, say).
// When the Server can also attach a session (as *Server can, with its Attach), an
// idle 2025-era session holds no goroutine and no timer: its messages run
// on the goroutines of the POSTs that bring them, and one timer per
// Endpoint expires idle sessions (see [WithIdleTimeout]).
package streamable
