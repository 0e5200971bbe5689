package otelsetup

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	prometheusbridge "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// WithMetricProducer adds a producer whose metrics every export of
// [ExportMetrics] carries, such as [MetricProducer]'s.
func WithMetricProducer(p sdkmetric.Producer) Option {
	return optionFunc(func(c *config) {
		if p != nil {
			c.producers = append(c.producers, p)
		}
	})
}

// ExportMetrics starts pushing the metrics of its producers
// ([WithMetricProducer]) periodically, where the standard OTEL_*
// environment says, and returns a shutdown function that exports a last
// time and stops the exporter (call it once, with a deadline, before the
// process exits) and whether anything is pushed. OTEL_METRICS_EXPORTER
// chooses the exporter, none by default (the package doc lists the
// values: otlp, console, none; any other is an error);
// OTEL_METRIC_EXPORT_INTERVAL and OTEL_METRIC_EXPORT_TIMEOUT set the period
// and bound each export, in milliseconds (60 s and 30 s by default). The
// resource is the one [TracerProvider] builds (see [WithService]). It
// builds no meter provider (the metrics are the producers') and sets no
// global.
func ExportMetrics(ctx context.Context, opts ...Option) (shutdown func(context.Context) error, exporting bool, err error) {
	cfg := newConfig(opts)
	noShutdown := func(context.Context) error { return nil }
	if disabled, _ := strconv.ParseBool(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED"))); disabled {
		return noShutdown, false, nil
	}
	exp, err := metricExporter(ctx, cfg)
	if err != nil || exp == nil {
		return noShutdown, false, err
	}
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, false, errors.Join(err, exp.Shutdown(ctx))
	}
	interval, timeout := exportPeriod()
	return startPeriodicExport(exp, cfg.producers, res, interval, timeout).shutdown, true, nil
}

// MetricsExporter returns the value of OTEL_METRICS_EXPORTER that
// [ExportMetrics] acts on: "none" when unset or when OTEL_SDK_DISABLED is
// true, for logs and status pages.
func MetricsExporter() string {
	if disabled, _ := strconv.ParseBool(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED"))); disabled {
		return "none"
	}
	if name := strings.TrimSpace(os.Getenv("OTEL_METRICS_EXPORTER")); name != "" {
		return name
	}
	return "none"
}

func metricExporter(ctx context.Context, cfg config) (sdkmetric.Exporter, error) {
	name := strings.TrimSpace(os.Getenv("OTEL_METRICS_EXPORTER"))
	switch name {
	case "", "none":
		return nil, nil
	case "console":
		exp, err := stdoutmetric.New(stdoutmetric.WithWriter(cfg.console))
		if err != nil {
			return nil, fmt.Errorf("otelsetup: console metric exporter: %w", err)
		}
		return exp, nil
	case "otlp":
	default:
		return nil, fmt.Errorf("otelsetup: OTEL_METRICS_EXPORTER=%q is not supported (want otlp, console or none)", name)
	}
	proto, variable, err := otlpProtocol("METRICS")
	if err != nil {
		return nil, err
	}
	var exp sdkmetric.Exporter
	switch {
	case proto == "http/protobuf":
		exp, err = newOTLPHTTPMetricExporter(ctx)
	case cfg.grpc == nil || cfg.grpc.Metrics == nil:
		return nil, errNoGRPC(variable)
	default:
		exp, err = cfg.grpc.Metrics(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("otelsetup: OTLP metric exporter: %w", err)
	}
	return exp, nil
}

// MetricProducer returns a producer of the metrics of the telemetry
// package (the instrumentation's collector, and metrics.NewLogLinesDropped's
// counter) that g gathers, named as OpenTelemetry names them, for
// [WithMetricProducer]: each family is renamed after
// mcpconv.OTelInstruments (mcp_server_operation_duration_seconds becomes
// mcp.server.operation.duration, unit s) and its label keys after
// mcpconv.OTelAttributeKey, as the package doc details. Other families
// of g (the Go and process collectors) are skipped. The scope is
// mcpconv.ScopeName. The metrics are read from the Prometheus collectors
// only when an export runs, so that recording costs nothing more and
// /metrics and OTLP report the same counts.
func MetricProducer(g prometheus.Gatherer) sdkmetric.Producer {
	p := &mcpProducer{
		names: mcpconv.OTelInstruments(),
		start: time.Now(),
		scope: instrumentation.Scope{Name: mcpconv.ScopeName},
	}
	filtered := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := g.Gather()
		kept := mfs[:0]
		for _, mf := range mfs {
			if _, ok := p.names[mf.GetName()]; ok {
				kept = append(kept, mf)
			}
		}
		return kept, err
	})
	p.bridge = prometheusbridge.NewMetricProducer(prometheusbridge.WithGatherer(filtered))
	return p
}

// mcpProducer renames what the bridge produces.
type mcpProducer struct {
	bridge sdkmetric.Producer
	names  map[string]mcpconv.OTelInstrument
	start  time.Time // the start time of the UpDownCounters
	scope  instrumentation.Scope
}

func (p *mcpProducer) Produce(ctx context.Context) ([]metricdata.ScopeMetrics, error) {
	sms, err := p.bridge.Produce(ctx)
	if err != nil {
		return nil, err
	}
	var out []metricdata.Metrics
	for _, sm := range sms {
		for _, m := range sm.Metrics {
			inst, ok := p.names[m.Name]
			if !ok {
				continue
			}
			m.Name, m.Unit = inst.Name, inst.Unit
			m.Data = p.convert(m.Data, inst)
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{Scope: p.scope, Metrics: out}}, nil
}

func (p *mcpProducer) convert(data metricdata.Aggregation, inst mcpconv.OTelInstrument) metricdata.Aggregation {
	switch d := data.(type) {
	case metricdata.Histogram[float64]:
		for i := range d.DataPoints {
			dp := &d.DataPoints[i]
			dp.Attributes = otelAttributes(dp.Attributes)
			dp.Exemplars = otelExemplars(dp.Exemplars)
		}
		return d
	case metricdata.ExponentialHistogram[float64]:
		for i := range d.DataPoints {
			d.DataPoints[i].Attributes = otelAttributes(d.DataPoints[i].Attributes)
		}
		return d
	case metricdata.Sum[float64]:
		for i := range d.DataPoints {
			dp := &d.DataPoints[i]
			dp.Attributes = otelAttributes(dp.Attributes)
			dp.Exemplars = otelExemplars(dp.Exemplars)
		}
		return d
	case metricdata.Gauge[float64]:
		for i := range d.DataPoints {
			d.DataPoints[i].Attributes = otelAttributes(d.DataPoints[i].Attributes)
		}
		if !inst.UpDown {
			return d
		}
		for i := range d.DataPoints {
			d.DataPoints[i].StartTime = p.start
		}
		return metricdata.Sum[float64]{DataPoints: d.DataPoints, Temporality: metricdata.CumulativeTemporality, IsMonotonic: false}
	}
	return data
}

// otelAttributes returns the attributes of a Prometheus series, keyed as
// OpenTelemetry keys them, without the empty ones.
func otelAttributes(s attribute.Set) attribute.Set {
	kvs := make([]attribute.KeyValue, 0, s.Len())
	for it := s.Iter(); it.Next(); {
		kv := it.Attribute()
		if kv.Value.AsString() == "" {
			continue
		}
		kvs = append(kvs, attribute.String(mcpconv.OTelAttributeKey(string(kv.Key)), kv.Value.AsString()))
	}
	return attribute.NewSet(kvs...)
}

// otelExemplars turns the hex trace and span ids the bridge leaves as
// text into their bytes, as OTLP needs them; an id that is not hex of the
// right length is left out.
func otelExemplars(es []metricdata.Exemplar[float64]) []metricdata.Exemplar[float64] {
	for i := range es {
		es[i].TraceID = hexID(es[i].TraceID, 16)
		es[i].SpanID = hexID(es[i].SpanID, 8)
	}
	return es
}

func hexID(text []byte, n int) []byte {
	if len(text) != 2*n {
		return nil
	}
	id := make([]byte, n)
	if _, err := hex.Decode(id, text); err != nil {
		return nil
	}
	return id
}
