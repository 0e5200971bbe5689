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

// Option configures [NewInstrumentation] and the middleware constructors
// of this package. There is one Option type for the whole package: each
// constructor reads the options that concern it and ignores the others
// (each option's doc says who reads it). A nil Option is ignored, and an
// option given twice keeps the last value, except [WithObservers], which
// adds.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is what the options set; the zero value is every default.
type config struct {
	// Tracing, TracingCalls, NewInstrumentation.
	provider   trace.TracerProvider
	propagator propagation.TextMapPropagator
	// Tracing, NewInstrumentation: WithUntrustedTraceContext.
	untrustedTrace bool
	// NewInstrumentation.
	registerer     prometheus.Registerer
	metricsOptions []telemetry.MetricsOption
	logger         *slog.Logger
	observers      []server.Observer
	recorders      []func(*server.Request, server.Outcome)
	timeout        time.Duration
	limit          int
	// Logging, NewInstrumentation.
	logLevel func(*server.Request, server.Outcome) slog.Level
	// Timeout, NewInstrumentation.
	timeoutFor func(*server.Request) time.Duration
	// ConcurrencyLimit, NewInstrumentation.
	limitFor  func(tool string) int
	limitWait time.Duration
	shareOf   func(*server.Request) string // the caller of a call (WithToolShare); nil: no share
	share     float64
	// NewInstrumentation (audit), Audit (auditValues).
	audit       io.Writer
	auditValues map[string]bool
	// NewInstrumentation (rate limits): WithRateLimit, WithToolRateLimit,
	// WithRateLimitRedis; nil: none.
	rateLimit *rateLimitConfig
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	return c
}

// WithTracerProvider sets the provider the tracer comes from, for
// [Tracing], [TracingCalls] and [NewInstrumentation]. For Tracing and
// TracingCalls nil, or no option, means the global provider
// ([otel.GetTracerProvider]) at the time they are called; being the OTel
// API's delegating provider, it follows a provider that cmd/ installs
// later. For NewInstrumentation nil, or no option, means no tracing at all.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) { c.provider = tp })
}

// WithPropagators sets the propagator that extracts the parent context from
// a request's params._meta and injects it into the _meta of requests to the
// client, for [Tracing], [TracingCalls] and [NewInstrumentation]. nil, or
// no option, means the global propagator ([otel.GetTextMapPropagator]),
// which is a no-op until cmd/ sets one: set it, or pass
// propagation.NewCompositeTextMapPropagator(propagation.TraceContext{},
// propagation.Baggage{}).
func WithPropagators(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) { c.propagator = p })
}

// WithUntrustedTraceContext makes [Tracing] and [NewInstrumentation]
// distrust the trace context in a request's params._meta, for servers whose
// clients are not part of the operator's tracing: a request's span is not
// its child but starts a trace of its own (or stays the child of the span
// the request arrived in, which is the server's) with a link to the
// client's span context, so that the server's sampler decides and the
// client picks neither the trace id nor sampling; and no baggage, neither
// the client's nor any already in the context, reaches the handlers. An
// HTTP server span around the endpoint (otelhttp) should ignore the
// traceparent header too: otelhttp.WithPublicEndpoint.
func WithUntrustedTraceContext() Option {
	return optionFunc(func(c *config) { c.untrustedTrace = true })
}

// WithRegisterer makes [NewInstrumentation] create a telemetry.Metrics
// (with the options of [WithMetricsOptions]) and register it with r. nil,
// or no option, means no metrics. It is never the default registry unless
// the caller passes it.
func WithRegisterer(r prometheus.Registerer) Option {
	return optionFunc(func(c *config) { c.registerer = r })
}

// WithMetricsOptions passes opts to telemetry.NewMetrics when
// [NewInstrumentation] creates the collector (see [WithRegisterer]), for
// native histograms, more methods, and so on. Calling it again replaces
// them.
func WithMetricsOptions(opts ...telemetry.MetricsOption) Option {
	return optionFunc(func(c *config) { c.metricsOptions = append([]telemetry.MetricsOption(nil), opts...) })
}

// WithLogger sets the logger of [NewInstrumentation]: it adds [Logging]
// to it, and [Recover] logs panics to it. nil, or no option, means no
// Logging, and Recover discards its records.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(c *config) { c.logger = l })
}

// WithLogLevel sets how [Logging] (and so [NewInstrumentation]) chooses the
// level of a request's record, from the request and its outcome; nil, or
// no option, means [DefaultLogLevel]. f is called concurrently and must be
// safe for that.
func WithLogLevel(f func(req *server.Request, out server.Outcome) slog.Level) Option {
	return optionFunc(func(c *config) { c.logLevel = f })
}

// WithTimeout makes [NewInstrumentation] add [Timeout] with d as the
// default time a request may take (d <= 0: none, unless [WithTimeoutFor]
// is given). The Timeout constructor takes its default as an argument and
// ignores this option.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.timeout = d })
}

// WithTimeoutFor sets a per-request timeout, for [Timeout] and
// [NewInstrumentation]: f returns the time req may take, 0 for the
// default, or a negative duration for no timeout at all. f sees the
// request before any handler runs (req.Method, req.Name for the tool or
// prompt, ...); it is called once per request, concurrently, and must be
// safe for that. A nil f is ignored.
func WithTimeoutFor(f func(req *server.Request) time.Duration) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.timeoutFor = f
		}
	})
}

// WithConcurrencyLimit makes [NewInstrumentation] add [ConcurrencyLimit]
// with n as the default number of calls of one tool that may run at once
// (n <= 0: none, unless [WithLimitFor] is given). The ConcurrencyLimit
// constructor takes its default as an argument and ignores this option.
func WithConcurrencyLimit(n int) Option {
	return optionFunc(func(c *config) { c.limit = n })
}

// WithLimitFor sets a per-tool limit, for [ConcurrencyLimit] and
// [NewInstrumentation]: f returns how many calls of tool may run at once,
// 0 for the default, or a negative number for no limit. It is called
// concurrently, with the name as the client sent it, and must be safe for
// that; it should give a tool the same limit every time (a tool's
// semaphore is sized by the call that creates it). A nil f is ignored.
func WithLimitFor(f func(tool string) int) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.limitFor = f
		}
	})
}

// WithLimitWait makes a call over its tool's limit wait up to d for a slot
// instead of being rejected at once (waiters are not served in arrival
// order), for [ConcurrencyLimit] and [NewInstrumentation]. It is rejected
// when d passes first; if its context ends first (a client cancel, a
// timeout from [Timeout] outside), it returns the context's cause. d <= 0
// means reject at once, the default.
func WithLimitWait(d time.Duration) Option {
	return optionFunc(func(c *config) { c.limitWait = d })
}

// WithToolShare gives each caller at most share (0 < share < 1) of each
// tool's slots, for [ConcurrencyLimit] and [NewInstrumentation]: a call
// whose caller holds its share already is refused at once, without
// waiting, with server.QuotaRefusal(protocol.QuotaToolShare), so that
// one caller's calls never take the slots another caller's call needs.
// A tool's share is rounded up, and at least one slot. key names the
// caller of a request (such as its principal, or its client's address)
// and must be fast and safe for concurrent use. A nil key, or a share
// out of range, means no share (the default).
func WithToolShare(share float64, key func(req *server.Request) string) Option {
	return optionFunc(func(c *config) {
		if key == nil || !(share > 0 && share < 1) {
			c.shareOf, c.share = nil, 0
			return
		}
		c.shareOf, c.share = key, share
	})
}

// WithObservers adds observers that [NewInstrumentation] combines with its
// metrics observer (server.Observers) in the server.WithObserver option of
// [Instrumentation.ServerOptions], which replaces any observer set before
// it. Calling it again adds more; nil entries are skipped.
func WithObservers(obs ...server.Observer) Option {
	return optionFunc(func(c *config) { c.observers = append(c.observers, obs...) })
}

// WithRequestRecorders adds functions that [NewInstrumentation] calls with
// each request's outcome (not a notification's), from the first
// middleware of its chain, so that they see the requests the chain
// refuses too (busy, timed out, panicked), in an AfterDone function (with
// server.WithOutcomeBatches, in the request's batch). With tracing,
// metrics and logging all on, it is theirs: the recorders run after the
// span's end, the metrics and the log line, with no closure and no layer
// of the chain of their own. They must not block, and must take the
// request's end from out.EndTime. Calling it again adds more; nil entries
// are skipped.
func WithRequestRecorders(fs ...func(*server.Request, server.Outcome)) Option {
	return optionFunc(func(c *config) {
		for _, f := range fs {
			if f != nil {
				c.recorders = append(c.recorders, f)
			}
		}
	})
}

// WithAuditLog makes [NewInstrumentation] add [Audit] writing to w, right
// after [Logging]. nil, or no option, means no audit log. w must not block
// (see Audit).
func WithAuditLog(w io.Writer) Option {
	return optionFunc(func(c *config) { c.audit = w })
}

// WithAuditArgumentValues makes [Audit] (and so [NewInstrumentation]) log
// the argument values of calls of tools, not only their names. Calling it
// again adds more tools. Values may hold personal data or secrets: opt in
// only tools whose arguments may be kept.
func WithAuditArgumentValues(tools ...string) Option {
	return optionFunc(func(c *config) {
		if c.auditValues == nil {
			c.auditValues = make(map[string]bool, len(tools))
		}
		for _, t := range tools {
			c.auditValues[t] = true
		}
	})
}
