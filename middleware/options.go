package middleware

import (
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
)

// InstrumentationOption configures [NewInstrumentation]. Every option of
// this package is one; an option that a constructor of one concern reads
// too is also of that constructor's option type ([TracingOption],
// [LoggingOption], ...), and no constructor accepts an option it ignores.
// A nil option is ignored, and an option given twice keeps the last value,
// except those whose doc says that they add.
type InstrumentationOption interface {
	applyInstrumentation(*instrumentationConfig)
}

// TracingOption configures [Tracing], and the same in [NewInstrumentation].
type TracingOption interface {
	InstrumentationOption
	applyTracing(*tracingConfig)
}

// TracingCallsOption configures [TracingCalls], and the same in
// [NewInstrumentation].
type TracingCallsOption interface {
	InstrumentationOption
	applyTracingCalls(*tracingConfig)
}

// TracerOption configures both [Tracing] and [TracingCalls] (and so
// [NewInstrumentation]): pass the same ones to both.
type TracerOption interface {
	TracingOption
	TracingCallsOption
}

// LoggingOption configures [Logging], and the same in [NewInstrumentation].
type LoggingOption interface {
	InstrumentationOption
	applyLogging(*loggingConfig)
}

// TimeoutOption configures [Timeout], and the same in [NewInstrumentation].
type TimeoutOption interface {
	InstrumentationOption
	applyTimeout(*timeoutConfig)
}

// ConcurrencyLimitOption configures [ConcurrencyLimit], and the same in
// [NewInstrumentation].
type ConcurrencyLimitOption interface {
	InstrumentationOption
	applyConcurrencyLimit(*limitConfig)
}

// AuditOption configures [Audit], and the same in [NewInstrumentation].
type AuditOption interface {
	InstrumentationOption
	applyAudit(*auditConfig)
}

// instrumentationConfig is what the options of NewInstrumentation set; the
// zero value is every default.
type instrumentationConfig struct {
	tracing tracingConfig
	logging loggingConfig
	timeout timeoutConfig
	limit   limitConfig
	audit   auditConfig

	registerer     prometheus.Registerer
	metrics        telemetry.MetricsConfig
	logger         *slog.Logger
	defaultTimeout time.Duration
	defaultLimit   int
	auditLog       io.Writer
	rateLimit      *rateLimitConfig // nil: no rate limits
}

// loggingConfig is what the options of Logging set.
type loggingConfig struct {
	level func(*server.Request, server.Outcome) slog.Level // nil: DefaultLogLevel
}

// timeoutConfig is what the options of Timeout set.
type timeoutConfig struct {
	forRequest func(*server.Request) time.Duration // nil: the default for all
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

// The option types, one per set of constructors that read an option.
type (
	instrumentationOption func(*instrumentationConfig)
	tracerOption          func(*tracingConfig) // Tracing and TracingCalls
	tracingOption         func(*tracingConfig) // Tracing alone
	loggingOption         func(*loggingConfig)
	timeoutOption         func(*timeoutConfig)
	limitOption           func(*limitConfig)
	auditOption           func(*auditConfig)
)

func (f instrumentationOption) applyInstrumentation(c *instrumentationConfig) { f(c) }

func (f tracerOption) applyInstrumentation(c *instrumentationConfig) { f(&c.tracing) }
func (f tracerOption) applyTracing(c *tracingConfig)                 { f(c) }
func (f tracerOption) applyTracingCalls(c *tracingConfig)            { f(c) }

func (f tracingOption) applyInstrumentation(c *instrumentationConfig) { f(&c.tracing) }
func (f tracingOption) applyTracing(c *tracingConfig)                 { f(c) }

func (f loggingOption) applyInstrumentation(c *instrumentationConfig) { f(&c.logging) }
func (f loggingOption) applyLogging(c *loggingConfig)                 { f(c) }

func (f timeoutOption) applyInstrumentation(c *instrumentationConfig) { f(&c.timeout) }
func (f timeoutOption) applyTimeout(c *timeoutConfig)                 { f(c) }

func (f limitOption) applyInstrumentation(c *instrumentationConfig) { f(&c.limit) }
func (f limitOption) applyConcurrencyLimit(c *limitConfig)          { f(c) }

func (f auditOption) applyInstrumentation(c *instrumentationConfig) { f(&c.audit) }
func (f auditOption) applyAudit(c *auditConfig)                     { f(c) }

// WithTracerProvider sets the provider the tracer comes from. nil, or no
// option, means no tracing, for [Tracing], [TracingCalls] and
// [NewInstrumentation] alike: the global provider is never read. To trace
// with it, pass otel.GetTracerProvider() (the OTel API's delegating
// provider, which follows a provider installed later).
func WithTracerProvider(tp trace.TracerProvider) TracerOption {
	return tracerOption(func(c *tracingConfig) { c.provider = tp })
}

// WithPropagators sets the propagator that extracts the parent context from
// a request's params._meta and injects it into the _meta of requests to the
// client. nil, or no option, means the global propagator
// ([otel.GetTextMapPropagator]), which is a no-op until cmd/ sets one: set
// it, or pass propagation.NewCompositeTextMapPropagator(
// propagation.TraceContext{}, propagation.Baggage{}).
func WithPropagators(p propagation.TextMapPropagator) TracerOption {
	return tracerOption(func(c *tracingConfig) { c.propagator = p })
}

// WithUntrustedTraceContext makes [Tracing] distrust the trace context in
// a request's params._meta: the request's span starts a trace of its own
// (or stays the child of the server's span the request arrived in) with a
// link to the client's span context, so that the server's sampler decides,
// and no baggage reaches the handlers. It is for servers whose clients are
// not part of the operator's tracing; the package doc says what else to
// configure.
func WithUntrustedTraceContext() TracingOption {
	return tracingOption(func(c *tracingConfig) { c.untrusted = true })
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

// WithLogger sets the logger of [NewInstrumentation]: it adds [Logging]
// to it, and [Recover] logs panics to it. nil, or no option, means no
// Logging, and Recover discards its records.
func WithLogger(l *slog.Logger) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.logger = l })
}

// WithLogLevel sets how [Logging] chooses the level of a request's record,
// from the request and its outcome; nil, or no option, means
// [DefaultLogLevel]. f is called concurrently and must be safe for that.
func WithLogLevel(f func(req *server.Request, out server.Outcome) slog.Level) LoggingOption {
	return loggingOption(func(c *loggingConfig) { c.level = f })
}

// WithTimeout makes [NewInstrumentation] add [Timeout] with d as the
// default time a request may take (d <= 0: none, unless [WithTimeoutFor]
// is given). The Timeout constructor takes its default as an argument.
func WithTimeout(d time.Duration) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.defaultTimeout = d })
}

// WithTimeoutFor sets a per-request timeout for [Timeout]: f returns the
// time req may take, 0 for the default, or a negative duration for no
// timeout at all. f sees the request before any handler runs (req.Method,
// req.Name for the tool or prompt, ...); it is called once per request,
// concurrently, and must be safe for that. A nil f is ignored.
func WithTimeoutFor(f func(req *server.Request) time.Duration) TimeoutOption {
	return timeoutOption(func(c *timeoutConfig) {
		if f != nil {
			c.forRequest = f
		}
	})
}

// WithConcurrencyLimit makes [NewInstrumentation] add [ConcurrencyLimit]
// with n as the default number of calls of one tool that may run at once
// (n <= 0: none, unless [WithLimitFor] is given). The ConcurrencyLimit
// constructor takes its default as an argument.
func WithConcurrencyLimit(n int) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.defaultLimit = n })
}

// WithLimitFor sets a per-tool limit for [ConcurrencyLimit]: f returns how
// many calls of tool may run at once, 0 for the default, or a negative
// number for no limit. It is called concurrently, with the name as the
// client sent it, and must be safe for that; it should give a tool the
// same limit every time (a tool's semaphore is sized by the call that
// creates it). A nil f is ignored.
func WithLimitFor(f func(tool string) int) ConcurrencyLimitOption {
	return limitOption(func(c *limitConfig) {
		if f != nil {
			c.forTool = f
		}
	})
}

// WithLimitWait makes a call over its tool's [ConcurrencyLimit] wait up to
// d for a slot instead of being rejected at once (waiters are not served
// in arrival order). It is rejected when d passes first; if its context
// ends first (a client cancel, a timeout from [Timeout] outside), it
// returns the context's cause. d <= 0 means reject at once, the default.
func WithLimitWait(d time.Duration) ConcurrencyLimitOption {
	return limitOption(func(c *limitConfig) { c.wait = d })
}

// WithToolShare gives each caller at most share (0 < share < 1) of each
// tool's slots of [ConcurrencyLimit]: a call whose caller holds its share
// already is refused at once, without waiting, with
// server.QuotaRefusal(protocol.QuotaToolShare), so that one caller's calls
// never take the slots another caller's call needs. A tool's share is
// rounded up, and at least one slot. key names the caller of a request
// (such as its principal, or its client's address) and must be fast and
// safe for concurrent use. A nil key, or a share out of range, means no
// share (the default).
func WithToolShare(share float64, key func(req *server.Request) string) ConcurrencyLimitOption {
	return limitOption(func(c *limitConfig) {
		if key == nil || !(share > 0 && share < 1) {
			c.shareOf, c.share = nil, 0
			return
		}
		c.shareOf, c.share = key, share
	})
}

// WithAuditLog makes [NewInstrumentation] add [Audit] writing to w, right
// after [Logging]. nil, or no option, means no audit log. w must not block
// (see Audit).
func WithAuditLog(w io.Writer) InstrumentationOption {
	return instrumentationOption(func(c *instrumentationConfig) { c.auditLog = w })
}

// WithAuditArgumentValues makes [Audit] log the argument values of calls
// of tools, not only their names. Calling it again adds more tools. Values
// may hold personal data or secrets: opt in only tools whose arguments may
// be kept.
func WithAuditArgumentValues(tools ...string) AuditOption {
	return auditOption(func(c *auditConfig) {
		if c.values == nil {
			c.values = make(map[string]bool, len(tools))
		}
		for _, t := range tools {
			c.values[t] = true
		}
	})
}
