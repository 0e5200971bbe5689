package vigil

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/vigil-mcp/vigil/internal/otelsetup"
)

// instruments are the service's metrics and tracing: a Prometheus registry
// holding the Go and process collectors (New's instrumentation adds the
// MCP collector), a tracer provider built from the OTEL_* environment,
// and, when OTEL_METRICS_EXPORTER says so, a meter provider that pushes the
// registry's MCP metrics under their OpenTelemetry names.
type instruments struct {
	registry *prometheus.Registry
	// pushed holds the collectors of registry that OTLP carries when
	// OTEL_METRICS_EXPORTER says so (the MCP metrics, not the Go runtime's,
	// whose gathering would cost each push more than the rest).
	pushed     *prometheus.Registry
	tracer     trace.TracerProvider
	propagator propagation.TextMapPropagator
	// exporter describes where spans go, for logs and the debug page.
	exporter string
	// metricsExporter is OTEL_METRICS_EXPORTER's choice: none, otlp or
	// console.
	metricsExporter string
	// shutdown flushes and stops the span and metric exporters.
	shutdown func(context.Context) error
}

// newInstruments builds the instruments. Spans go where OTEL_* says
// (otelsetup.TracerProvider); when it says nothing (no OTEL_TRACES_EXPORTER,
// no OTLP endpoint) they go to the in-memory trace ring that ring returns,
// or, with a nil ring, nowhere (a no-op provider); a tracer given by the
// user (WithTracerProvider) is used as is. Metrics are pushed
// where OTEL_METRICS_EXPORTER says (otelsetup.ExportMetrics; unset means
// not at all), read from the registry at each export
// (otelsetup.MetricProducer), so that recording a request costs the same
// whether they are pushed or not. OTLP goes over HTTP, or over gRPC
// when the environment asks for it and grpc has its exporters
// (WithOTLPGRPC).
func newInstruments(ctx context.Context, name, version string, registry *prometheus.Registry, tracer trace.TracerProvider, grpc otelsetup.GRPCExporters, ring func() sdktrace.SpanExporter) (*instruments, error) {
	if registry == nil {
		registry = prometheus.NewRegistry()
	}
	in := &instruments{
		registry: registry,
		pushed:   prometheus.NewRegistry(),
		// W3C trace context and baggage, read from and written to _meta.
		propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	if err := errors.Join(
		in.registry.Register(collectors.NewGoCollector(
			// The runtime's essentials, not its 25 MemStats gauges: /metrics
			// at start stays within its size budget (docs/operations.md).
			collectors.WithGoCollectorMemStatsMetricsDisabled(),
			collectors.WithGoCollectorRuntimeMetrics(collectors.GoRuntimeMetricsRule{Matcher: goRuntimeEssentials()}),
		)),
		in.registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		in.registry.Register(collectors.NewBuildInfoCollector()),
	); err != nil {
		return nil, err
	}

	shutdownTraces := func(context.Context) error { return nil }
	ringUsed := false
	fallback := func(context.Context) (sdktrace.SpanExporter, error) {
		if ring == nil {
			return nil, nil // "none"
		}
		ringUsed = true
		return ring(), nil
	}
	if tracer == nil {
		tp, shutdown, err := otelsetup.TracerProvider(ctx,
			otelsetup.WithService(name, version),
			otelsetup.WithFallbackExporter(fallback),
			otelsetup.WithSyncFallback(), // the ring keeps spans in memory: no queue, no goroutine
			otelsetup.WithConsoleWriter(os.Stderr),
			otelsetup.WithGRPC(grpc))
		if err != nil {
			return nil, err
		}
		tracer, shutdownTraces = tp, shutdown
		in.exporter = exporterName(ringUsed, tp)
	} else {
		in.exporter = "none"
		if _, noop := tracer.(noop.TracerProvider); !noop {
			in.exporter = "the service's TracerProvider"
		}
	}
	shutdownMetrics, _, err := otelsetup.ExportMetrics(ctx,
		otelsetup.WithService(name, version),
		otelsetup.WithConsoleWriter(os.Stderr),
		otelsetup.WithGRPC(grpc),
		otelsetup.WithMetricProducer(otelsetup.MetricProducer(in.pushed)))
	if err != nil {
		return nil, errors.Join(err, shutdownTraces(ctx))
	}
	in.tracer = tracer
	in.shutdown = func(ctx context.Context) error {
		// Metrics last: the spans' flush may still be counted.
		return errors.Join(shutdownTraces(ctx), shutdownMetrics(ctx))
	}
	in.metricsExporter = otelsetup.MetricsExporter()
	return in, nil
}

// exporterName describes where spans go.
func exporterName(ring bool, tp trace.TracerProvider) string {
	if ring {
		return "in-memory ring (/debug/vigil)"
	}
	if _, ok := tp.(*sdktrace.TracerProvider); !ok {
		return "none"
	}
	if name := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); name != "" {
		return name
	}
	return "otlp"
}

// register registers c with the registry that /metrics serves and with
// the one that OTLP pushes.
func (in *instruments) register(c prometheus.Collector) error {
	if err := in.registry.Register(c); err != nil {
		return err
	}
	return in.pushed.Register(c)
}

// goRuntimeEssentials matches the runtime metric served beside the Go
// collector's base set (goroutines, threads, GC pauses, GOGC, GOMAXPROCS,
// the memory limit): the heap's live objects, which with the process
// collector's resident memory answers "how much memory" without the
// MemStats family.
func goRuntimeEssentials() *regexp.Regexp {
	return regexp.MustCompile(`^/memory/classes/heap/objects:bytes$`)
}
