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
// Beyond Conn, a transport may implement optional capabilities, which the
// server package looks for with [As] (through [Wrapper]s): messages
// dispatched on their own goroutines ([Inline], [Driven], served by an
// [Attacher]), a session id of the transport's ([SessionIDer]), one write
// to many sessions ([Multicast]), the client's standalone stream
// ([ClientPresence]), a session several replicas serve ([Shared]), one
// request per Conn ([Single]), answers the transport gives itself
// ([EndAnswerer], [Admitter]). A Conn with none of them is served fully;
// each only makes a session cheaper or more exact.
//
// A request whose answer can no longer be delivered (the client closed its
// stream and cannot resume it) is cancelled by its receiver with a stream
// close's cause. The transport says so by the one means its delivery has:
// a request dispatched on its stream's goroutine ([Inline]) by the end of
// the context it was dispatched with; any other (read from a queue, or on
// a stream the client could have resumed) by an [*Abandoned] through Read.
//
// Read [Conn] first, then [DecodeMessage].
package transport
