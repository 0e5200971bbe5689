// Package debugpage is Vigil's live page: a server-rendered view of an MCP
// server's recent activity, to mount on an admin listener, as cmd/vigil
// does at /debug/vigil. It is for any server built on Vigil's packages, in
// the manner of x/net/trace and OpenTelemetry's zpages.
//
// # Wiring
//
// A [Recorder] gathers what the page shows through the hooks Vigil's
// public API already offers: [Recorder.ServerOption] (a server.Option that
// registers its server.Observer, which hears of every request's outcome,
// those the chain refuses too, and who opened each session behind an OAuth
// resource server) and [Recorder.SpanExporter] (the intake of its
// trace ring, for the tracer provider: sdktrace.WithSyncer). Any hook left out leaves
// its part of the page empty. [Handler] serves the page of a
// server.Server from a Recorder; mount it with http.StripPrefix. Nothing
// is registered anywhere by itself, and nothing is global. The Example
// shows a whole server.
//
// # What it shows
//
// The page, refreshed by the browser every few seconds, first answers "is
// anything wrong?": what needs attention (recent errors, cancellations
// with their causes, dropped responses, the slowest traces, each linked
// to its trace view), a per-method/tool table (rate, latency quantiles,
// errors, cancellations and drops over the last minute and since start,
// sortable), and small inline SVG charts of the last ten minutes (request
// rate, p99, outcomes stacked). Below: the requests in flight (oldest
// first), the live sessions (transport, protocol era, client, principal,
// in-flight count), a summary of the kept traces by method/tool, the
// recently ended sessions, and the memory bound of the page's data.
//
// Every view is a plain URL: ?session=ID, ?key=METHOD-OR-"tools/call NAME",
// ?outcome=error|cancelled|dropped|slow narrow it, ?sort=COLUMN orders the
// table, ?format=json returns the same view as JSON (with &series=1, the
// last ten minutes second by second too), ?refresh=N sets the refresh
// period in seconds (0: none). /trace/{id} shows a kept trace as a
// waterfall of its span tree, each span with its timing bar, status,
// attributes and events, and the trace's outcome with the cancellation
// cause, drop reason or error; a server-to-client call (elicitation,
// sampling) is the CLIENT child of its request's span; ?format=json gives
// the trace as JSON.
//
// The pages are read-only, escape everything they show (HTML-escaped,
// links other than http and https refused, as html/template does;
// bidirectional controls and zero-width characters show as \u202e), run
// no script and are served with a strict Content-Security-Policy
// that allows only their own stylesheet and hashed styles. They have no
// authorization: the page lists session ids, the only credential of an
// unauthenticated session, so serve it where only operators reach, and
// guard a loopback listener against DNS rebinding (cmd/vigil refuses a
// Host that is not a loopback name there).
//
// # Retention of traces
//
// The trace ring keeps, within a fixed memory bound, the traces worth
// looking at, whatever came after them (tail-based retention). A trace is
// classified when its local root span ends (a span without a parent, or
// whose parent is remote: the SERVER span of a request); its children
// normally end, and so arrive, before it. It is then kept by some of these
// stores, each bounded by a count, and forgotten when none holds it:
//
//   - recent: the last routine (successful) traces, [DefaultTraceRing] of
//     them unless [WithTraceRing] says otherwise;
//   - slow: per method/tool, the five traces with the longest root span,
//     whatever their outcome;
//   - error, cancelled, dropped: per outcome, the last fifty traces
//     overall, and per method/tool and outcome the last two, so that a
//     flood of one tool's failures does not push out another's;
//   - pending: up to 128 traces whose root has not ended yet (spans of
//     requests still running), the oldest forgotten first.
//
// The key of a trace is its root span's name, "{mcp.method.name} {target}"
// (such as "tools/call echo"). At most 256 keys are tracked; names the
// server does not know (its methods, tools and prompts) and later ones
// count under "(other)", so that names a client makes up never take the
// place of real ones. A trace keeps at most 256 spans and a span at most
// 8 KiB by estimate (a larger one is kept compacted, long values cut);
// the rest are counted, not kept. Besides the counts, the estimated size
// of all kept spans is bounded by a byte budget ([WithTraceRing],
// 16 MiB by default): past it, the oldest routine traces go first, then
// the oldest pending ones, then the oldest of the others.
//
// The ring takes every span the server ends, on every core, in batches: a
// span is pushed on a lock-free intake and goes on, and the span that
// fills a batch stores it if the ring's lock is free; whoever holds the
// lock stores what waits before letting go, and every reader takes the
// lock, so that no reader misses a span that has ended. No span waits for
// the lock, which under load would hand it over waiter by waiter, and the
// ring's code runs once per batch rather than once per request
// (docs/perf/ROUNDS.md has the measurements).
//
// # Memory
//
// What the page keeps is bounded, and the page prints the bound: the
// request counts hold a fixed set of buckets per method/tool, for at most
// 256 names the server knows plus "other", all allocated when a name is
// first seen; the event log keeps the last fifty cancellations, dropped
// responses and ended sessions, each text cut at 256 bytes, and an entry
// per live session (the transport bounds them: the page prints the bound
// of the sessions live now); the trace ring keeps
// its byte budget, one batch on its intake, and the bookkeeping of the
// most traces its stores can hold. Recording a request takes no lock on
// its way but to add a new name, and allocates nothing.
package debugpage
