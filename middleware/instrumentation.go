package middleware

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Instrumentation is everything that instruments and guards a server, built
// once by [NewInstrumentation] from one set of options: the middleware
// chain, the CLIENT spans of the server's requests to clients, the metrics
// observer, and the wrapper that labels and counts each transport's
// connections. It holds no global state; its methods are safe for
// concurrent use.
type Instrumentation struct {
	metrics  *metrics.Metrics      // nil without WithRegisterer
	chain    []server.Middleware   // in the documented order; no nil entries
	calls    server.CallMiddleware // nil without tracing
	observer *metricsObserver      // nil without metrics

	rateLimiter *rateLimiter // nil without rate limits
}

// NewInstrumentation builds the instrumentation opts describe. Each part
// is in only with its option: [WithTracerProvider], the spans;
// [WithRegisterer], the metrics; [WithRequestLog], the request log;
// [WithAuditLog], the audit log; the rate limits, an
// [Instrumentation.RateLimitHandler] and the tool rates. The recovery of
// panics ([PanicError]) is always in. The chain runs, outermost first, the
// tracing, the metrics, the request log, the audit log, the recovery and
// the tool rates, then the application's own middleware; the package doc
// says why. The error is the registerer's, such as a
// prometheus.AlreadyRegisteredError.
func NewInstrumentation(opts ...InstrumentationOption) (*Instrumentation, error) {
	cfg := configure(opts, InstrumentationOption.applyInstrumentation)
	inst := &Instrumentation{}
	if cfg.registerer != nil {
		m := metrics.New(metricsVocabulary(), metricsOptions(cfg.metrics)...)
		obs := &metricsObserver{m: m}
		if err := cfg.registerer.Register(obs); err != nil { // the collector that flushes first
			return nil, fmt.Errorf("middleware: registering the metrics: %w", err)
		}
		inst.metrics, inst.observer = m, obs
	}
	tracingOn := cfg.tracing.provider != nil // never the global provider
	var spans spanStarter
	if tracingOn {
		tc := cfg.tracing.withGlobals() // the global propagator, if none
		spans = newServerSpanStarter(tc)
		inst.calls = tracingCalls(tc)
	}
	switch {
	case tracingOn && inst.metrics != nil && cfg.logger != nil:
		inst.chain = append(inst.chain, recordRequests(spans, inst.metrics, newRequestLogger(cfg.logger, cfg.logging)))
	default:
		if tracingOn {
			inst.chain = append(inst.chain, tracing(spans))
		}
		if inst.metrics != nil {
			inst.chain = append(inst.chain, recordMetrics(inst.metrics))
		}
		if cfg.logger != nil {
			inst.chain = append(inst.chain, logging(cfg.logger, cfg.logging))
		}
	}
	if cfg.auditLog != nil {
		inst.chain = append(inst.chain, audit(cfg.auditLog, cfg.audit))
	}
	inst.chain = append(inst.chain, recoverPanics(cfg.logger))
	rl := newRateLimiter(cfg, inst.metrics)
	inst.rateLimiter = rl
	if mw := rl.middleware(); mw != nil { // before a call waits for a slot
		inst.chain = append(inst.chain, mw)
	}
	return inst, nil
}

// recordRequests is the tracing, the metrics and the request log, in that order,
// as one middleware: what each does on a request's way in, and one
// AfterDone function that ends the span, records the metrics and writes
// the log line, in that order too. The three apart cost a request three
// closures to allocate (what each keeps until the outcome) and three
// layers of the chain; together, one and one.
func recordRequests(st spanStarter, m *metrics.Metrics, l *requestLogger) server.Middleware {
	return func(next server.Handler) server.Handler {
		// This frame stands over the span's start and the whole handler:
		// what it keeps is what they need (see docs/limits.md, "The
		// request's stack"); the rest is done in record's.
		return func(ctx context.Context, req *server.Request) (any, error) {
			principal := principalOf(req) // read once for the span, the exemplar and the log line
			ctx, span, start := st.start(ctx, req)
			record(ctx, span, spanEnd{&st, start}, principal, m, l, req)
			return next(ctx, req)
		}
	}
}

// record has req's AfterDone end its span and, unless req is a
// notification (traced only, as by the three middleware apart), record
// its metrics and log line, in that order. It records the start of req's
// metrics now.
//
//go:noinline
func record(ctx context.Context, span trace.Span, se spanEnd, principal *auth.Principal, m *metrics.Metrics, l *requestLogger, req *server.Request) {
	if req.IsNotification() {
		serverhook.Of[server.Outcome](ctx).AfterDone(func(out server.Outcome) {
			se.st.attributes(ctx, span, se.start, req, principal)
			endServerSpan(span, req, out)
		})
		return
	}
	scope := requestScope{principal: principal, span: span.SpanContext()}
	start, traceID := recordStart(scope.span, m, req)
	serverhook.Of[server.Outcome](ctx).AfterDone(func(out server.Outcome) {
		se.st.attributes(ctx, span, se.start, req, principal)
		if se.st.capture != nil {
			captureContent(se.st.capture, span, req, out)
		}
		endServerSpan(span, req, out)
		recordEnd(m, req, transportOf(ctx), start, traceID, out)
		scope := scope // a copy on this goroutine's stack, the closure's by value
		l.log(ctx, &scope, req, out, start)
	})
}

// spanEnd is what a request's end needs of its span's start: the
// spanStarter, and how the span started (spanStarter.attributes).
type spanEnd struct {
	st    *spanStarter
	start *spanStart
}

// ServerOptions returns the options that instrument a server, for
// server.New: server.WithMiddleware with the chain (see
// [NewInstrumentation] for its order), server.WithCallMiddleware with
// the CLIENT spans when tracing, and server.WithObserver with the metrics
// observer when there are metrics. Put them before the application's
// server.WithMiddleware (which appends, inside the chain); the
// application's observers go in server.WithObserver, which adds. It
// returns a new slice on every call; a nil *Instrumentation returns none.
func (i *Instrumentation) ServerOptions() []server.Option {
	if i == nil {
		return nil
	}
	opts := []server.Option{server.WithMiddleware(i.chain...)}
	if i.calls != nil {
		opts = append(opts, server.WithCallMiddleware(i.calls))
	}
	if i.observer != nil {
		opts = append(opts, i.observer.serverOption())
	}
	return opts
}

// ConnServer returns the server to hand to a transport in place of srv:
// it serves each connection with srv, with transportName (a
// telemetry.Transport constant) as the transport label of the session,
// write-error and traffic metrics and of network.transport on spans, and
// counts the traffic. The series of what srv serves now are created at
// zero, so that rate() starts at 0 and absence alerts see them: those of
// transportName, and, when srv is a *server.Server made with
// [Instrumentation.ServerOptions], those of the methods it answers (a
// feature it does not serve, such as tasks, has none) and of its
// registered tools; tools registered later are labeled as themselves too,
// from their first call. Call it once per transport, after registering
// the tools. Without metrics, or on a nil *Instrumentation, it only labels
// the context.
func (i *Instrumentation) ConnServer(srv streamable.Server, transportName string) streamable.Server {
	var m *metrics.Metrics
	if i != nil {
		m = i.metrics
	}
	if m != nil {
		var methods, tools []string
		if s := i.observer.server(srv); s != nil {
			methods = s.Methods()
		}
		if t, ok := srv.(interface{ ToolNames() []string }); ok {
			tools = t.ToolNames()
		}
		m.Precreate(transportName, methods, tools)
	}
	return countConns(srv, m, transportName)
}

// RateLimitHandler returns next behind the principal rate of
// [WithRateLimit]: every POST takes a token of its principal's bucket, and
// one over the rate is answered 429 with Retry-After, RateLimit and
// RateLimit-Policy headers and a JSON-RPC error (-32000, data
// {"quota":"rate","retryAfterSeconds":N}), counted as a quota refusal; GET
// and DELETE pass. Put it inside the authorization guard, which names the
// principal; without one, the principal is the client's IP address (an
// IPv6 address by its /64 network), which it also hands to the tool rates
// of [WithToolRateLimit]. Without rate limits, or on a nil
// *Instrumentation, it returns next.
func (i *Instrumentation) RateLimitHandler(next http.Handler) http.Handler {
	if i == nil {
		return next
	}
	return i.rateLimiter.handler(next)
}

// Collector returns the collector of the server's metrics that
// [NewInstrumentation] made and registered, for a second registry (an
// OTLP push) to read too: it records the outcomes waiting for their batch
// first. nil without [WithRegisterer].
func (i *Instrumentation) Collector() prometheus.Collector {
	if i == nil || i.observer == nil {
		return nil
	}
	return i.observer
}

// MessageRejected counts a message the HTTP endpoint refused before any
// session saw it, by reason (mcp_server_messages_rejected_total): the
// hook of streamable.WithRejectHook. It does nothing without
// [WithRegisterer].
func (i *Instrumentation) MessageRejected(r protocol.RejectReason) {
	if i != nil {
		i.metrics.MessageRejected(r.String())
	}
}

// QuotaRefused counts a request or session refused over quota q
// (mcp_server_quota_refusals_total): the OnRefuse of the endpoint's
// streamable.Quotas. It does nothing without [WithRegisterer].
func (i *Instrumentation) QuotaRefused(q protocol.Quota) {
	if i != nil {
		i.metrics.QuotaRefused(q.String())
	}
}
