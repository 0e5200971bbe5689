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
//     response with a [protocol.DropReason] ([Outcome], [Request.OnDone],
//     [Request.AfterDone]). A
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
// panics, refusals with their typed [protocol.RejectReason]) goes to an
// [Observer]. The package imports no telemetry library; the middleware and
// telemetry packages build on it. Codes, versions and reasons come from the
// leaf package transport/protocol.
//
// Each request's protocol era is chosen once, when it is admitted (era.go):
// a 2025 session peer (era_session.go), whose client calls ([Elicit],
// [CreateMessage], [ListRoots], [CallClient]) are requests on the session,
// or a 2026-07-28 stateless round (era_stateless.go), whose client calls
// become an input_required result. Asking the client, task ownership and
// views, and result decoration go through it; [Request.InSession] tells
// middleware which it is.
//
// To test a server of your own, use the client of package server/mcptest.
//
// Start with [New], [Server.AddTool] and [Server.Serve], and the examples.
package server
