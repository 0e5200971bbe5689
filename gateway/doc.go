// Package gateway puts a [server.Server] in front of MCP servers it did
// not build, its upstreams: [Mount] opens a session to each [Upstream], a
// stdio server run as a child process or a Streamable HTTP endpoint, and
// registers the upstream's tools, prompts, resources and resource
// templates on the server, so that the server's
// middleware (authorization, quotas, telemetry, the live page) applies to
// them as to its own, and each call is forwarded upstream with the
// caller's context: a caller's cancel reaches the upstream as
// notifications/cancelled at once, and an upstream that dies ends the
// calls it had with an error at once, which wraps server.ErrUpstreamClosed
// so that their outcome's cause is upstream_closed.
//
// Each call forwarded has a client span of its own, child of the
// caller's server span (made by that span's tracer provider), whose trace
// context goes upstream in _meta; [Config.Registerer] gets the metrics of
// the upstreams, labeled by their names.
//
// One upstream's tools and prompts keep their names; with several, each
// is named NAME_name after its upstream (templates' names too; URIs are
// kept), and two with one name or URI are refused. The operator's
// [Catalog] ([Config].Catalog) renames, describes, hides and narrows
// them, serves named endpoints ([Gateway.Endpoints]) and pins their
// definitions against silent changes ([Catalog.WithLock]).
//
// Each downstream session's calls go to an upstream session of its own (a
// process of its own for stdio, at most [Config].MaxProcesses), opened by
// its first call and closed when it ends or has been idle for
// [Config].IdleTimeout; a session each upstream keeps for listing serves
// the requests of no session (2026-07-28 stateless ones) and, with
// [Upstream].Shared, every session's. An upstream session that went away
// is started again, with backoff. docs/gateway.md is the design, with
// what is not built yet.
//
// No upstream can keep the others from being served: Mount registers
// those ready by the end of its ctx and starts the others in the
// background, each start bounded by [Config].StartTimeout. Each upstream
// has its own [State] ([Gateway.Upstreams]; Health requires those
// [Config].Required names), and a call to one that is not ready is
// refused at once, -32000 with data {"retryAfterSeconds": N}.
//
// Package gateway imports the server and the client core
// (the Dial of transport/streamable, for HTTP upstreams); the root
// package vigil and cmd/vigil import it. Read [Example] first.
package gateway
