package middleware

import (
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

// MetricsObserver returns the metrics observer of NewInstrumentation over
// m, for the tests of package middleware_test; with a nil m it does
// nothing.
func MetricsObserver(m *metrics.Metrics) server.Observer {
	if m == nil {
		return server.NopObserver{}
	}
	return &metricsObserver{m: m}
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
