package middleware

import (
	"io"
	"log/slog"

	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/server"
)

// The parts of NewInstrumentation that the tests of package
// middleware_test assemble by hand.
var (
	RecordMetrics = recordMetrics
	CountConns    = countConns
	CountConn     = countConn
)

// MetricsObserver returns the hooks of the metrics observer of
// NewInstrumentation over m, for the tests of package middleware_test;
// with a nil m, none.
func MetricsObserver(m *metrics.Metrics) server.Observer {
	if m == nil {
		return server.Observer{}
	}
	return (&metricsObserver{m: m}).hooks()
}

// Middleware returns the instrumentation's chain, a new slice on every
// call, for the tests that count its layers or run it apart.
func (i *Instrumentation) Middleware() []server.Middleware {
	if i == nil {
		return nil
	}
	return append([]server.Middleware(nil), i.chain...)
}

// MetricsOf returns the collector i made, for the tests of package
// middleware_test to read and record with; nil without metrics.
func MetricsOf(i *Instrumentation) *metrics.Metrics {
	if i == nil {
		return nil
	}
	return i.metrics
}

// The middleware that NewInstrumentation adds with WithConcurrencyLimit, WithRequestLog and WithAuditLog, one at a time, for
// the tests of package middleware_test that run one apart; opts are those
// of NewInstrumentation, of which each reads its own.
func Logging(logger *slog.Logger, opts ...InstrumentationOption) server.Middleware {
	return logging(logger, configure(opts, InstrumentationOption.applyInstrumentation).logging)
}

func Audit(w io.Writer, opts ...InstrumentationOption) server.Middleware {
	return audit(w, configure(opts, InstrumentationOption.applyInstrumentation).audit)
}

// Tracing, TracingCalls and Recover are the SERVER spans, the CLIENT
// spans and the recovery of panics of NewInstrumentation, apart, for the
// tests of package middleware_test.
func Tracing(opts ...InstrumentationOption) server.Middleware {
	cfg := configure(opts, InstrumentationOption.applyInstrumentation).tracing
	if cfg.provider == nil {
		return func(next server.Handler) server.Handler { return next }
	}
	return tracing(newServerSpanStarter(cfg.withGlobals()))
}

func TracingCalls(opts ...InstrumentationOption) server.CallMiddleware {
	cfg := configure(opts, InstrumentationOption.applyInstrumentation).tracing
	if cfg.provider == nil {
		return func(next server.CallFunc) server.CallFunc { return next }
	}
	return tracingCalls(cfg.withGlobals())
}

func Recover(logger *slog.Logger) server.Middleware { return recoverPanics(logger) }

// HasRateLimiter reports whether the instrumentation has rate limits.
func (i *Instrumentation) HasRateLimiter() bool { return i.rateLimiter != nil }

// MetricsVocabulary is the vocabulary NewInstrumentation gives its
// collector, for the tests of package middleware_test.
var MetricsVocabulary = metricsVocabulary
