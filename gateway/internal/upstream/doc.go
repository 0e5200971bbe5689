// Package upstream is the MCP client side of Vigil's gateway (docs/gateway.md):
// one upstream MCP session over a [transport.Conn] ([Open], [Session]) and
// the child process of a stdio upstream ([StartProcess], [Process]). An
// HTTP upstream's Conn is the client side of Streamable HTTP that
// server/mcptest uses too (streamable.Dial): the session era (a session
// id, the GET stream, streams resumed with Last-Event-ID,
// streamable.ErrUnknownSession on a 404) and the stateless 2026-07-28 era
// (server/discover, the era's _meta and headers on each request,
// input_required rounds answered through OnRequest), whose Session side
// is here.
//
// A [Session] keeps, toward the upstream, the promises the server package
// keeps toward clients: a caller whose context ends has its request
// cancelled upstream at once (notifications/cancelled) and gets the
// context's cause; an upstream that closes, dies or breaks the protocol
// answers every pending call with [ErrGone] the moment it happens, from a
// snapshot of the pending calls taken under the session's lock; and every
// byte the upstream sends is bounded: the transport bounds each frame, a
// bounded queue holds its notifications (more are dropped and counted),
// a bounded buffer holds each call's progress, and at most a few of its
// requests to the client run at once.
//
// It is a leaf: it imports the transport packages and the standard library,
// never the server, the middleware or the root package. The public mount
// API lives beside the server it mounts on.
package upstream
