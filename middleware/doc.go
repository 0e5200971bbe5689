// Package middleware instruments and guards a Vigil server from the outside,
// built from the server package's exported types and recorded through the
// telemetry package. Its subpackages are the guards of the same layer,
// each in the form its hook takes: middleware/auth the principal and the
// server options bound to it, middleware/oauth the resource server whose
// Handler is HTTP middleware, and middleware/policy the CEL policies given
// to server.WithToolPolicy and server.WithToolAccess.
//
// Start with [NewInstrumentation]: one call, with one set of options
// ([WithTracerProvider], [WithRegisterer], [WithRequestLog], ...), yields an
// [Instrumentation] holding everything: the options for server.New
// ([Instrumentation.ServerOptions]: the middleware chain, the CLIENT spans
// of the server's requests to clients, the metrics observer) and the
// wrapper of the server a transport serves ([Instrumentation.ConnServer]:
// the transport label, the traffic counters, and the series of what the
// server serves, created at zero). The metrics learn the tool names from
// the server's live registry, and a scrape of them first records the
// outcomes that wait for their batch (server.WithOutcomeBatches): no
// caller has to flush.
//
// Each part is an option of NewInstrumentation, and exists only as one:
// [WithTracerProvider] gives every request a SERVER span and every request
// to the client a CLIENT span; [WithRequestLog] writes one record per
// request; the recovery of panics (always in) turns a panic into a -32603
// answer ([PanicError]); [WithAuditLog] writes one JSON line
// per tools/call (who, which tool, how it ended, the argument names);
// [WithRateLimit] and [WithToolRateLimit] (token buckets per principal, in
// memory or shared between replicas with [WithSharedRateLimits]) give an
// [Instrumentation.RateLimitHandler], which refuses an HTTP request over
// its principal's rate with 429, and the chain a tools/call over its
// tool's rate with -32000. The timeout and the concurrency limit are the
// server's (server.WithTimeout, server.WithConcurrencyLimit): the chain
// counts and logs what they answer as it does every answer. [LogHandler] adds the trace, span, session and
// request ids to log records.
//
// # What NewInstrumentation builds
//
// Each option adds its part, and without it the part is absent:
//
//   - [WithTracerProvider]: the SERVER and CLIENT spans, with
//     [WithPropagators] (nil: the global propagator),
//     [WithUntrustedTraceContext] and [WithContentCapture]. Without a
//     provider, no spans at all (the global provider is not used).
//   - [WithRegisterer]: the collector of the server's metrics (built with
//     [WithMetricsConfig]) registered with it, recorded by the chain (every
//     request) and by the metrics observer (sessions, dropped responses,
//     failed writes, rejected messages). Without it, no metrics.
//   - [WithRequestLog]: the request log (with [WithLogLevel]), and the
//     logger of the recovery of panics, which is always in. Without it, no
//     request log, and the recovery discards its records.
//   - [WithRateLimit], [WithToolRateLimit] (with [WithSharedRateLimits]):
//     an [Instrumentation.RateLimitHandler], the tool rates in the chain
//     (a call over its rate never waits for a slot of
//     server.WithConcurrencyLimit, which the server takes after the chain).
//   - [WithAuditLog]: the audit log (with [WithAuditArgumentValues]), right
//     after Logging, for the same reason: every tools/call gets its line.
//
// NewInstrumentation() with no options gives a server the recovery of
// panics and nothing else.
//
// # The order of the chain
//
// The chain runs in this order, outermost first:
//
//  1. the tracing: the span covers everything below, and its context (trace
//     id) reaches the rest;
//  2. the metrics: inside Tracing so that the trace id becomes the
//     exemplar; outside everything that may fail a request, so that every
//     request is counted, a panic, a timeout or a rejection as an error;
//  3. [WithRequestLog]: inside Tracing, for the trace ids of the record; outside
//     Recover and the tool rates, which may answer without the handler, so
//     that every request gets its record;
//  4. [WithAuditLog], for the same reasons as Logging;
//  5. the recovery of panics: below Tracing, Metrics and Logging, so that they see a
//     panic as a -32603 error return, and above the rest, which it covers;
//  6. the tool rates of [WithToolRateLimit], so that a call over its rate
//     never waits for a slot;
//
// then the application's own middleware, which server.WithMiddleware
// appends after [Instrumentation.ServerOptions]. The server's timeout
// (server.WithTimeout) is the request's own deadline from when it was
// read, so it covers the whole chain; its concurrency limit
// (server.WithConcurrencyLimit) takes a slot below the chain, so that a
// call waiting for one runs out of time like a slow handler and the
// metrics count a refusal as an error with error_type -32000.
//
// When tracing, metrics and logging are all on, the first three run as one
// middleware, which records exactly what they do apart with one function
// at the request's end and one closure per request, not three. An
// application that wants each request's outcome too registers a
// server.Observer with server.WithObserver: its RequestEnded runs after
// the span's end, the metrics and the log line, in the same batch.
//
// # Spans
//
// The SERVER span of [WithTracerProvider] is named "{mcp.method.name} {target}" (the
// tool or prompt name), with mcp.method.name, jsonrpc.request.id,
// mcp.session.id, mcp.protocol.version, gen_ai.tool.name,
// gen_ai.prompt.name, gen_ai.operation.name, mcp.resource.uri,
// network.transport (and network.protocol.name), rpc.response.status_code
// for an error response and, on failure, error.type. Over HTTP, with
// streamable.ConnContext as the http.Server's ConnContext, it also gets
// client.address and client.port (the connection's remote address, never
// X-Forwarded-For) and network.protocol.version. When the request was
// authorized (an [auth.Principal] in its arrival context), the span also
// gets user.id (the principal's subject) and vigil.oauth.client_id (the
// OAuth client its token was issued to), and for a delegated token
// vigil.oauth.actors (its act chain, RFC 8693 §4.1: who acts on behalf of
// the subject, the one acting now first).
//
// The parent is the context in the request's params._meta (traceparent,
// tracestate, baggage), read with the configured propagator; the ambient
// span is then a link. Without one in _meta, the ambient span is the
// parent, as it always is with [WithUntrustedTraceContext]. The ambient
// span is the one in the context the message arrived with
// ([server.Request.ArrivalContext]): over Streamable HTTP, the span of the
// very POST that carried it (an otelhttp server span, say), even in a 2025
// session whose context came from the POST that opened it; over other
// transports, the span in the context the session was served with.
//
// The span ends at the instant the request's fate is sealed (recorded,
// with server.WithOutcomeBatches, in the request's batch), so it covers
// writing the response. Its status
// is Error exactly when error.type is set: a JSON-RPC error (error.type is
// the code, such as "-32603"; a panic is "-32603" with an exception event;
// a result over its bound, answered -32603, is "result_too_large", see
// [server.WithMaxResultBytes]) or a tool result with isError ("tool_error"; "invalid_arguments" when the
// core refused arguments that do not match the tool's input schema, see
// [server.Outcome.InvalidArguments]). As the OpenTelemetry MCP
// conventions say, a caller's fault is no error: -32700, -32600, -32601,
// -32602 and -32002 leave the status Unset and set no error.type, only
// rpc.response.status_code (and no error_type on the outcome count). A
// cancellation is not an error: the status stays Unset, the span gets the
// attribute vigil.cancel.cause and a "cancelled" event. A handler timeout answered
// with -32001 is both an error and a "cancelled" event with cause
// "timeout". A response that was not written adds a "response_dropped"
// event with vigil.drop.reason. Messages the core refuses before the chain
// runs (malformed, a duplicate id, over a limit, before initialize) get no
// span; the server's Observer sees them.
//
// The CLIENT spans of [WithTracerProvider] end with the client's answer: an
// error answer sets error.type to its code and the status to Error; no
// answer in time sets error.type "timeout"; a call abandoned because the
// request or the session was cancelled keeps the status Unset and gets
// vigil.cancel.cause and a "cancelled" event.
//
// [WithUntrustedTraceContext] is for servers whose clients are not part of
// the operator's tracing: the client picks neither the trace id nor
// sampling, and no baggage, neither the client's nor any already in the
// context, reaches the handlers. An HTTP server span around the endpoint
// (otelhttp) should ignore the traceparent header too:
// otelhttp.WithPublicEndpoint.
//
// # The request log
//
// The record of [WithRequestLog] carries:
//
//   - method, tool (tools/call) or prompt (prompts/get), request_id,
//     session_id (left out for a stateless request), subject (the
//     [auth.Principal]'s, when the request was authorized) and duration
//     (since the core read the request);
//   - outcome: ok, error, cancelled or dropped, in the precedence of
//     the metrics, so that logs and metrics agree;
//   - for error: code (the JSON-RPC code answered) and error (the text of
//     the error the chain returned, which the client may not have seen;
//     cause "timeout" too for -32001, "upstream_closed" for an error that
//     wraps server.ErrUpstreamClosed);
//   - for cancelled: cause (client_cancel, transport_close, shutdown,
//     timeout, other) and reason (why no response was written);
//   - for dropped: reason, and error (the write error) if there was one;
//   - for ok: tool_error=true when a tool result has isError set (also
//     when it refused the arguments).
//
// A [LogHandler] under the logger adds the trace and span ids, and does
// not add request_id and session_id twice.
//
// # Metrics
//
// Besides its outcome, the chain counts a cancellation with cause
// timeout when a timeout ([server.ErrHandlerTimeout], say of
// server.WithTimeout, or a deadline inside the chain) made the handler
// answer with an error: that request's outcome is error (-32001 for
// ErrHandlerTimeout). Dropped responses are counted by the metrics observer,
// which sees drops the middleware cannot (requests read after the writer
// broke).
//
// # Panics
//
// The session core recovers a panic too, as a last resort, and reports it
// to the Observer (HandlerPanicked) and to the server's logger; what
// the recovery of panics adds is that the middleware outside it see the panic as an
// ordinary error return, counted with outcome error and error_type -32603,
// and ending its span with status Error and the panic as an exception
// event.
//
// # Dependencies
//
// It imports server, transport and telemetry, middleware/auth (to read the
// request's principal), the OpenTelemetry API (never the SDK) and the
// Prometheus client; the server package never imports it.
// Nothing here is global: the caller passes its own registerer and tracer
// provider (without a provider nothing is traced; only the propagator
// defaults to the OTel global one, which is read, never set).
//
// Read ExampleNewInstrumentation first, then Example_instrumentation (every
// part at work) and ExampleTracing.
package middleware
