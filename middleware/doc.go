// Package middleware instruments and guards a Vigil server from the outside:
// each constructor returns a server.Middleware ([Tracing], [Metrics], ...) or a
// server.Observer ([Observer]) built from the server package's exported types
// and recorded through the telemetry package. It also wraps connections
// ([CountConn], [Instrument]) to count traffic per transport.
//
// Tracing gives every request and notification a SERVER span per the
// OpenTelemetry MCP conventions, parented on the traceparent in
// params._meta; [TracingCalls], a server.CallMiddleware, gives the server's
// requests to the client CLIENT spans and injects their context into
// _meta; [LogHandler] adds the trace, span, session and request ids to log
// records. They take a trace.TracerProvider and a propagator as options
// (the OTel globals by default, read, never set).
//
// It imports server, transport and telemetry, and the OpenTelemetry API
// (never the SDK); the server package never imports it. Nothing here is
// global: the caller creates a telemetry.Metrics, registers it with its own
// Prometheus registry, and passes it in.
//
// The middleware that guard a request are [Recover] (a panic becomes a
// -32603 answer), [Timeout] (the handler's context is cancelled with
// server.ErrHandlerTimeout, answered -32001), [ConcurrencyLimit] (calls per
// tool, over it -32000) and [Logging] (one record per request). Each is
// usable alone; [Standard] returns a selection of them in the documented
// order: Tracing, Metrics, Logging, Recover, Timeout, ConcurrencyLimit,
// then the application's middleware. The span covers everything, the
// metrics see the trace id for exemplars and a recovered panic, a timeout
// or a rejection as an error, and every request is logged.
//
// Read Example_standard (a server with all of them) first, then
// ExampleMetrics and ExampleTracing.
package middleware
