package middleware

import (
	"context"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
)

// Instrumentation is everything that instruments and guards a server, built
// once by [NewInstrumentation] from one set of options: the middleware
// chain, the CLIENT spans of the server's requests to clients, the metrics
// observer, and the wrapper that labels and counts each transport's
// connections. It holds no global state; its methods are safe for
// concurrent use.
type Instrumentation struct {
	metrics  *telemetry.Metrics    // nil without WithRegisterer
	chain    []server.Middleware   // in the documented order; no nil entries
	calls    server.CallMiddleware // nil without tracing
	observer server.Observer       // nil when there is nothing to observe

	rateLimiter *RateLimiter // nil without rate limits
}

// NewInstrumentation builds the instrumentation opts describe. What each
// option adds, and what its absence means:
//
//   - [WithTracerProvider]: [Tracing] and [TracingCalls], with
//     [WithPropagators] (nil: the global propagator) and
//     [WithUntrustedTraceContext]. Without a provider, no spans at all
//     (the global provider is not used).
//   - [WithRegisterer]: a telemetry.Metrics (built with
//     [WithMetricsOptions]) registered with it, recorded by
//     [RecordMetrics] and [MetricsObserver]; the error is the
//     registerer's, such as a prometheus.AlreadyRegisteredError. Without
//     it, no metrics.
//   - [WithLogger]: [Logging] (with [WithLogLevel]), and the logger of
//     [Recover]. Without it, no request log, and Recover discards.
//   - [Recover] is always in.
//   - [WithTimeout] or [WithTimeoutFor]: [Timeout].
//   - [WithConcurrencyLimit] or [WithLimitFor]: [ConcurrencyLimit] (with
//     [WithLimitWait] and [WithToolShare]).
//   - [WithRateLimit], [WithToolRateLimit] (with [WithRateLimitRedis]):
//     an [Instrumentation.RateLimiter], whose tool rates run in the chain
//     between Timeout and ConcurrencyLimit (a call over its rate never
//     waits for a slot).
//   - [WithObservers]: more observers next to the metrics observer.
//   - [WithRequestRecorders]: functions called with each request's
//     outcome, first in the chain.
//   - [WithAuditLog]: [Audit] (with [WithAuditArgumentValues]), right
//     after Logging, for the same reason: every tools/call gets its line.
//
// The chain runs in this order, outermost first:
//
//  1. [Tracing]: the span covers everything below, and its context (trace
//     id) reaches the rest;
//  2. [RecordMetrics]: inside Tracing so that the trace id becomes the
//     exemplar; outside everything that may fail a request, so that every
//     request is counted, a panic, a timeout or a rejection as an error;
//  3. [Logging]: inside Tracing, for the trace ids of the record; outside
//     Recover, Timeout and ConcurrencyLimit, which may answer without the
//     handler, so that every request gets its record;
//  4. [Recover]: below Tracing, Metrics and Logging, so that they see a
//     panic as a -32603 error return, and above the rest, which it covers;
//  5. [Timeout]: its time limit covers the wait for a slot and the handler;
//  6. [ConcurrencyLimit]: innermost, so that a call waiting for a slot
//     ([WithLimitWait]) runs out of time like a slow handler;
//
// then the application's own middleware, which server.WithMiddleware
// appends after [Instrumentation.ServerOptions]. NewInstrumentation() with
// no options gives a server Recover and nothing else.
//
// When tracing, metrics and logging are all on, the first three run as one
// middleware, which records exactly what they do apart with one AfterDone
// function and one closure per request, not three;
// [Instrumentation.Middleware] returns it as one entry.
func NewInstrumentation(opts ...Option) (*Instrumentation, error) {
	cfg := newConfig(opts)
	inst := &Instrumentation{}
	if cfg.registerer != nil {
		m := telemetry.NewMetrics(cfg.metricsOptions...)
		if err := cfg.registerer.Register(m); err != nil {
			return nil, fmt.Errorf("middleware: registering the metrics: %w", err)
		}
		inst.metrics = m
	}
	if cfg.provider != nil {
		inst.calls = TracingCalls(opts...)
	}
	switch {
	case cfg.provider != nil && inst.metrics != nil && cfg.logger != nil:
		inst.chain = append(inst.chain, recordRequests(newServerSpanStarter(opts), inst.metrics, newRequestLogger(cfg.logger, opts), cfg.recorders))
	default:
		if len(cfg.recorders) > 0 {
			inst.chain = append(inst.chain, recordOutcomes(cfg.recorders))
		}
		if cfg.provider != nil {
			inst.chain = append(inst.chain, Tracing(opts...))
		}
		if inst.metrics != nil {
			inst.chain = append(inst.chain, RecordMetrics(inst.metrics))
		}
		if cfg.logger != nil {
			inst.chain = append(inst.chain, Logging(cfg.logger, opts...))
		}
	}
	if cfg.audit != nil {
		inst.chain = append(inst.chain, Audit(cfg.audit, opts...))
	}
	inst.chain = append(inst.chain, Recover(cfg.logger))
	if cfg.timeout > 0 || cfg.timeoutFor != nil {
		inst.chain = append(inst.chain, Timeout(cfg.timeout, opts...))
	}
	rl := newRateLimiter(cfg, inst.metrics)
	inst.rateLimiter = rl
	if mw := rl.middleware(); mw != nil { // before a call waits for a slot
		inst.chain = append(inst.chain, mw)
	}
	if cfg.limit > 0 || cfg.limitFor != nil {
		inst.chain = append(inst.chain, ConcurrencyLimit(cfg.limit, opts...))
	}
	var obs []server.Observer
	if inst.metrics != nil {
		obs = append(obs, MetricsObserver(inst.metrics))
	}
	for _, o := range cfg.observers {
		if o != nil {
			obs = append(obs, o)
		}
	}
	if len(obs) > 0 {
		inst.observer = server.Observers(obs...)
	}
	return inst, nil
}

// recordRequests is [Tracing], [RecordMetrics] and [Logging], in that
// order, as one middleware: what each does on a request's way in, and one
// AfterDone function that ends the span, records the metrics and writes
// the log line, in that order too, then calls the recorders
// ([WithRequestRecorders]). The three apart cost a request three closures
// to allocate (what each keeps until the outcome) and three layers of the
// chain; together, one and one.
func recordRequests(st spanStarter, m *telemetry.Metrics, l *requestLogger, recorders []func(*server.Request, server.Outcome)) server.Middleware {
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			// Read once for the span, the exemplar and the log line.
			scope := requestScope{principal: principalOf(req)}
			ctx, span := st.start(ctx, req, scope.principal)
			if req.IsNotification() { // traced only, as by the three apart
				req.AfterDone(func(out server.Outcome) { endServerSpan(span, req, out) })
				return next(ctx, req)
			}
			scope.span = span.SpanContext()
			start, traceID := recordStart(scope.span, m, req)
			req.AfterDone(func(out server.Outcome) {
				endServerSpan(span, req, out)
				recordEnd(m, req, start, traceID, out)
				scope := scope // a copy on this goroutine's stack, the closure's by value
				l.log(ctx, &scope, req, out, start)
				for _, f := range recorders {
					f(req, out)
				}
			})
			return next(ctx, req)
		}
	}
}

// recordOutcomes is the middleware of [WithRequestRecorders] when tracing,
// metrics and logging are not all on: it calls them with each request's
// outcome, from an AfterDone function of its own.
func recordOutcomes(recorders []func(*server.Request, server.Outcome)) server.Middleware {
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if !req.IsNotification() {
				req.AfterDone(func(out server.Outcome) {
					for _, f := range recorders {
						f(req, out)
					}
				})
			}
			return next(ctx, req)
		}
	}
}

// ServerOptions returns the options that instrument a server, for
// server.New: server.WithMiddleware with the chain (see
// [NewInstrumentation] for its order), server.WithCallMiddleware with
// [TracingCalls] when tracing, and server.WithObserver with the metrics
// observer and those of [WithObservers], when there are any. Put them
// before the application's server.WithMiddleware (which appends, inside
// the chain); server.WithObserver replaces, so give other observers with
// WithObservers. It returns a new slice on every call; a nil
// *Instrumentation returns none.
func (i *Instrumentation) ServerOptions() []server.Option {
	if i == nil {
		return nil
	}
	opts := []server.Option{server.WithMiddleware(i.chain...)}
	if i.calls != nil {
		opts = append(opts, server.WithCallMiddleware(i.calls))
	}
	if i.observer != nil {
		opts = append(opts, server.WithObserver(i.observer))
	}
	return opts
}

// Middleware returns the chain of [Instrumentation.ServerOptions] alone, in
// its order, for a caller that assembles server.WithMiddleware itself. It
// returns a new slice on every call.
func (i *Instrumentation) Middleware() []server.Middleware {
	if i == nil {
		return nil
	}
	return append([]server.Middleware(nil), i.chain...)
}

// ConnServer returns the ConnServer to hand to a transport in place of srv:
// it serves each connection with srv, with transportName (a
// telemetry.Transport constant) as the transport label of the session,
// write-error and traffic metrics and of network.transport on spans, and
// counts the traffic ([CountConns]). When srv has registered tools
// (*server.Server's ToolNames), their duration series are created at zero
// now, so that rate() starts at 0; tools registered later are labeled as
// themselves too, from their first call. Call it once per transport, after
// registering the tools. Without metrics, or on a nil *Instrumentation,
// it only labels the context.
func (i *Instrumentation) ConnServer(srv ConnServer, transportName string) ConnServer {
	m := i.Metrics()
	if t, ok := srv.(interface{ ToolNames() []string }); ok && m != nil {
		m.PrecreateTools(t.ToolNames())
	}
	return CountConns(srv, m, transportName)
}

// RateLimiter returns the rate limiter of [WithRateLimit] and
// [WithToolRateLimit], whose Handler the HTTP endpoint goes behind; nil
// without rate limits (a nil *RateLimiter's Handler returns its argument).
func (i *Instrumentation) RateLimiter() *RateLimiter {
	if i == nil {
		return nil
	}
	return i.rateLimiter
}

// Metrics returns the collector [NewInstrumentation] registered, for the
// hooks of other packages (streamable.WithRejectHook(inst.Metrics().MessageRejected));
// nil without [WithRegisterer], and every method of a nil
// *telemetry.Metrics does nothing.
func (i *Instrumentation) Metrics() *telemetry.Metrics {
	if i == nil {
		return nil
	}
	return i.metrics
}
