// Package middleware instruments a Vigil server from the outside: each
// constructor returns a server.Middleware ([Tracing], [Metrics], ...) or a
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
// The recommended order is Tracing, Metrics, Recover, Timeout, then the
// application's middleware: the span covers everything, and the metrics see
// the trace id for exemplars and a recovered panic or a timeout as an error.
//
// Read ExampleMetrics (server.New with Metrics and Observer, and a registry)
// first, then ExampleTracing.
package middleware
