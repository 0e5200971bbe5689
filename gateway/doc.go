// Package gateway puts a [server.Server] in front of MCP servers it did
// not build, its upstreams: [Mount] opens a session to each [Upstream], a
// stdio server run as a child process or a Streamable HTTP endpoint, and
// registers the upstream's tools on the server, so that the server's
// middleware (authorization, quotas, telemetry, the live page) applies to
// them as to its own, and each call is forwarded upstream with the
// caller's context: a caller's cancel reaches the upstream as
// notifications/cancelled at once, and an upstream that dies ends the
// calls it had with an error at once.
//
// One upstream's tools keep their names; with several, each tool is
// named NAME_tool after its upstream, and two tools with one name are
// refused. docs/gateway.md is the design, with what is not built yet.
//
// Package gateway imports the server and the client core
// (internal/upstream); the root package vigil and cmd/vigil import it.
// Read [Example] first.
package gateway
