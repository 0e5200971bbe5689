// Package transport defines how Vigil moves JSON-RPC 2.0 messages: the [Conn]
// contract every transport implements, the wire types ([ID], [Request],
// [Response], [Batch]) with their codec, and the two error classes a transport
// wraps its read and write failures in ([ErrClosed] and [ErrPeerGone]).
//
// The package knows nothing of MCP sessions, lifecycles or telemetry; it
// imports only the leaf vocabulary transport/protocol (codes, versions and
// the outcome reasons shared by every layer). Concrete transports live in
// the sub-packages stdio (newline-delimited JSON on a pair of streams),
// memory (an in-process pair for tests and examples) and streamable
// (Streamable HTTP).
//
// Read [Conn] first, then [DecodeMessage].
package transport
