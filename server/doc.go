// Package server is Vigil's MCP session core: a [Server] that serves each
// client connection ([transport.Conn]) as a [Session], runs every request
// through a middleware chain ([Handler], [Middleware], [Chain]) on its own
// goroutine, and guarantees what MCP servers routinely get wrong when clients
// vanish:
//
//   - When the transport closes, every in-flight handler is cancelled (not
//     waited for), with a cause read by [context.Cause]: [ErrTransportClose],
//     [ErrClientCancel], [ErrShutdown] or [ErrHandlerTimeout]. The first
//     cause wins. initialize is never cancelled.
//   - Every request ends in exactly one outcome: a response written, or no
//     response with a [protocol.DropReason] ([Outcome], [Request.OnDone]). A
//     cancelled request is never answered, and a cancel racing the handler's
//     return never yields two answers for one id.
//   - Writes that fail because this side closed ([transport.ErrClosed]) or
//     the peer vanished ([transport.ErrPeerGone]) are tolerated, classified
//     and reported, never logged as errors and never a panic.
//   - Server-to-client requests ([Session.Call], [ListRoots]) waiting
//     when the session ends fail with [ErrConnectionClosed] from a snapshot
//     of the pending table.
//
// What the core sees and middleware cannot (sessions, drops, write failures,
// panics) goes to an [Observer]. The package imports no telemetry library;
// the middleware and telemetry packages build on it.
//
// Start with [New], [Server.AddTool] and [Server.Serve], and the examples.
package server
