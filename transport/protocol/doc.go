// Package protocol is Vigil's shared vocabulary, defined once: the MCP
// protocol versions, the JSON-RPC and MCP error codes, and the outcome
// vocabulary of a request — why it was cancelled ([CancelReason]), why its
// response was dropped ([DropReason]), why a message was refused before a
// handler ([RejectReason]), which quota refused it ([Quota]).
//
// Each outcome value is a small integer whose String form is the label that
// metrics, spans and logs carry, so a reason travels typed from the session
// core or the HTTP transport to telemetry and is never matched as text.
//
// The package imports nothing of Vigil: transport, server, middleware and
// telemetry all read their codes, versions and reasons from here.
package protocol
