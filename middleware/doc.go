// Package middleware instruments and guards a Vigil server from the outside,
// built from the server package's exported types and recorded through the
// telemetry package.
//
// Start with [NewInstrumentation]: one call, with one set of options
// ([WithTracerProvider], [WithRegisterer], [WithLogger], ...), yields an
// [Instrumentation] holding everything: the options for server.New
// ([Instrumentation.ServerOptions]: the middleware chain, the CLIENT spans
// of the server's requests to clients, the metrics observer) and the
// wrapper of the server a transport serves ([Instrumentation.ConnServer]:
// the transport label and the traffic counters). The metrics learn the tool
// names from the server's live registry.
//
// The parts are usable alone. Each of these returns a server.Middleware:
// [Tracing] gives every request and notification a SERVER span per the
// OpenTelemetry MCP conventions, parented on the traceparent in
// params._meta (or linked to it: [WithUntrustedTraceContext]); [RecordMetrics] records every request in a
// telemetry.Metrics; [Logging] writes one record per request; [Recover]
// turns a panic into a -32603 answer; [Timeout] cancels the handler's
// context with server.ErrHandlerTimeout, answered -32001;
// [ConcurrencyLimit] bounds the calls per tool, over it -32000; [Audit]
// writes one JSON line per tools/call (who, which tool, how it ended, the
// argument names). [WithRateLimit] and [WithToolRateLimit] (token buckets
// per principal, in memory or shared on Redis with [WithRateLimitRedis])
// give an [Instrumentation.RateLimiter]: its Handler refuses an HTTP
// request over its principal's rate with 429, and the chain a tools/call
// over its tool's rate with -32000.
// [TracingCalls] is a server.CallMiddleware (CLIENT spans for the requests
// to the client, their context injected into _meta); [MetricsObserver] is a
// server.Observer (sessions, dropped responses, failed writes, rejected
// messages); [CountConn] and [CountConns] count traffic per transport;
// [LogHandler] adds the trace, span, session and request ids to log
// records.
//
// The package has one [Option] type: every constructor reads the options
// that concern it. The documented order of the chain, which
// NewInstrumentation builds, is Tracing, Metrics, Logging, Audit (with
// [WithAuditLog]), Recover, Timeout, ConcurrencyLimit, then the
// application's middleware: the span
// covers everything, the metrics see the trace id for exemplars and a
// recovered panic, a timeout or a rejection as an error, and every request
// is logged.
//
// It imports server, transport and telemetry, middleware/auth (to read the
// request's principal), the OpenTelemetry API (never the SDK) and the
// Prometheus client; the server package never imports it.
// Nothing here is global: the caller passes its own registerer and tracer
// provider (without a provider, Tracing and TracingCalls alone read the
// OTel globals, never set them; NewInstrumentation then traces nothing).
//
// Read ExampleNewInstrumentation first, then Example_instrumentation (every
// part at work), ExampleRecordMetrics and ExampleTracing.
package middleware
