package middleware

import (
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
)

// InstrumentationOption configures [NewInstrumentation]; every option of
// this package is one. A nil option is ignored, and an option given twice
// keeps the last value, except those whose doc says that they add.
type InstrumentationOption interface {
	applyInstrumentation(*instrumentationConfig)
}

// instrumentationConfig is what the options of NewInstrumentation set; the
// zero value is every default.
type instrumentationConfig struct {
	tracing tracingConfig
	logging loggingConfig
	audit   auditConfig

	registerer prometheus.Registerer
	metrics    telemetry.MetricsConfig
	logger     *slog.Logger
	auditLog   io.Writer
	rateLimit  *rateLimitConfig // nil: no rate limits
}

// loggingConfig is what the options of Logging set.
type loggingConfig struct {
	level func(*server.Request, server.Outcome) slog.Level // nil: DefaultLogLevel
}

// auditConfig is what the options of Audit set.
type auditConfig struct {
	values map[string]bool // the tools whose argument values are logged
}

// configure returns the zero C with opts applied in order, nil ones
// skipped.
func configure[C, O any](opts []O, apply func(O, *C)) C {
	var c C
	for _, o := range opts {
		if any(o) != nil {
			apply(o, &c)
		}
	}
	return c
}

// instrumentationOption is an [InstrumentationOption] made of a function.
type instrumentationOption func(*instrumentationConfig)

func (f instrumentationOption) applyInstrumentation(c *instrumentationConfig) { f(c) }

// WithTracerProvider makes [NewInstrumentation] trace with tp: every
// request and notification gets one SERVER span per the OpenTelemetry
// semantic conventions for MCP, named "{mcp.method.name} {target}", with
// the attributes the package doc lists, parented on the trace context in
// its params._meta (read with [WithPropagators]) or else linked from the
// span it arrived in; it ends when the outcome is sealed, with status
// Error exactly when error.type is set. Every request the server sends a
// client (sampling, elicitation, roots, ping) gets a CLIENT span, whose
// context is injected into its params._meta. nil, or no option, means no
// tracing: the global provider is never read. To trace with it, pass
// otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.tracing.provider = tp })
}

// WithPropagators sets the propagator that extracts the parent context from
// a request's params._meta and injects it into the _meta of requests to the
// client. nil, or no option, means the global propagator
// ([otel.GetTextMapPropagator]), which is a no-op until cmd/ sets one: set
// it, or pass propagation.NewCompositeTextMapPropagator(
// propagation.TraceContext{}, propagation.Baggage{}).
func WithPropagators(p propagation.TextMapPropagator) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.tracing.propagator = p })
}

// WithUntrustedTraceContext makes the tracing of [WithTracerProvider] distrust the trace context in
// a request's params._meta: the request's span starts a trace of its own
// (or stays the child of the server's span the request arrived in) with a
// link to the client's span context, so that the server's sampler decides,
// and no baggage reaches the handlers. It is for servers whose clients are
// not part of the operator's tracing; the package doc says what else to
// configure.
func WithUntrustedTraceContext() InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.tracing.untrusted = true })
}

// WithRegisterer makes [NewInstrumentation] create the collector of the
// server's metrics (tuned by [WithMetricsConfig]) and register it with r.
// nil, or no option, means no metrics. It is never the default registry unless
// the caller passes it.
func WithRegisterer(r prometheus.Registerer) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.registerer = r })
}

// WithMetricsConfig tunes the collector [NewInstrumentation] creates (see
// [WithRegisterer]): native histograms, more methods, the upstreams of a
// gateway, and so on. Calling it again replaces mc.
func WithMetricsConfig(mc telemetry.MetricsConfig) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.metrics = mc })
}

// WithRequestLog makes [NewInstrumentation] log each request: one record,
// "request", per request (notifications pass unlogged) once its outcome is
// sealed, with the attributes the package doc lists under "The request
// log", at the level of [WithLogLevel]; nothing is built for a level the
// logger does not enable. The record is logged with the handler's context,
// so that a [LogHandler] adds the trace and span ids. Panics
// ([PanicError]) are logged to l too. nil, or no option, means no request
// log, and panics are not logged.
func WithRequestLog(l *slog.Logger) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.logger = l })
}

// WithLogLevel sets how the request log of [WithRequestLog] chooses the level
// of a request's record, from the request and its outcome; nil, or no
// option, means [DefaultLogLevel]. f is called concurrently and must be
// safe for that.
func WithLogLevel(f func(req *server.Request, out server.Outcome) slog.Level) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.logging.level = f })
}

// WithAuditLog makes [NewInstrumentation] write one record, as a line of
// JSON in a single Write (docs/operations.md lists its members), to w for each tools/call when its
// outcome is sealed: who called, which tool, in which session, how it
// ended and how long it took, and the names of its arguments (their values
// with [WithAuditArgumentValues]). Other methods pass unrecorded. The
// write runs after the response was written, on the goroutine that sealed
// the outcome: w must not block (pass a writer that writes in the
// background, as cmd/vigil does) and must be safe for concurrent use,
// writing each Write whole. Write errors are ignored. nil, or no option,
// means no audit log.
func WithAuditLog(w io.Writer) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.auditLog = w })
}

// WithAuditArgumentValues makes the audit log of [WithAuditLog] log the
// argument values of calls of tools, not only their names. Calling it
// again adds more tools. Values may hold personal data or secrets: opt in
// only tools whose arguments may be kept.
func WithAuditArgumentValues(tools ...string) InstrumentationOption {
	return instrumentationOption(func(cfg *instrumentationConfig) {
		c := &cfg.audit
		if c.values == nil {
			c.values = make(map[string]bool, len(tools))
		}
		for _, t := range tools {
			c.values[t] = true
		}
	})
}
