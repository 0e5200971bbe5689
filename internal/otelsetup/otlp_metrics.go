package otelsetup

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
)

// otlpMetricExporter is OTLP over HTTP for metrics: an sdkmetric.Exporter
// that turns each collection into its protobuf form and posts it to
// /v1/metrics (see otlpHTTP), with the SDK's default temporality
// (cumulative) and aggregations.
type otlpMetricExporter struct{ c *otlpHTTP }

func newOTLPHTTPMetricExporter(context.Context) (sdkmetric.Exporter, error) {
	c, err := newOTLPHTTP("METRICS", "/v1/metrics")
	if err != nil {
		return nil, err
	}
	return otlpMetricExporter{c}, nil
}

func (otlpMetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (otlpMetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// Export posts an ExportMetricsServiceRequest holding rm.
func (e otlpMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	pb, err := resourceMetricsPB(rm)
	if err != nil {
		return err
	}
	body, err := appendRepeated(nil, pb)
	if err != nil {
		return err
	}
	return e.c.export(ctx, body)
}

func (otlpMetricExporter) ForceFlush(context.Context) error { return nil }

func (e otlpMetricExporter) Shutdown(context.Context) error {
	e.c.close()
	return nil
}

func resourceMetricsPB(rm *metricdata.ResourceMetrics) (*metricpb.ResourceMetrics, error) {
	out := &metricpb.ResourceMetrics{Resource: resourcePB(rm.Resource)}
	if rm.Resource != nil {
		out.SchemaUrl = rm.Resource.SchemaURL()
	}
	for _, sm := range rm.ScopeMetrics {
		s := &metricpb.ScopeMetrics{Scope: scopePB(sm.Scope), SchemaUrl: sm.Scope.SchemaURL}
		for _, m := range sm.Metrics {
			pm := &metricpb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit}
			if err := setMetricData(pm, m.Data); err != nil {
				return nil, fmt.Errorf("otelsetup: metric %s: %w", m.Name, err)
			}
			s.Metrics = append(s.Metrics, pm)
		}
		out.ScopeMetrics = append(out.ScopeMetrics, s)
	}
	return out, nil
}

func resourcePB(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return &resourcepb.Resource{}
	}
	return &resourcepb.Resource{Attributes: keyValuesPB(r.Attributes())}
}

func scopePB(s instrumentation.Scope) *commonpb.InstrumentationScope {
	set := s.Attributes
	return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version, Attributes: keyValuesPB(set.ToSlice())}
}

func setMetricData(pm *metricpb.Metric, data metricdata.Aggregation) error {
	switch d := data.(type) {
	case metricdata.Gauge[int64]:
		pm.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: numberPoints(d.DataPoints)}}
	case metricdata.Gauge[float64]:
		pm.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: numberPoints(d.DataPoints)}}
	case metricdata.Sum[int64]:
		pm.Data = &metricpb.Metric_Sum{Sum: &metricpb.Sum{DataPoints: numberPoints(d.DataPoints), AggregationTemporality: temporalityPB(d.Temporality), IsMonotonic: d.IsMonotonic}}
	case metricdata.Sum[float64]:
		pm.Data = &metricpb.Metric_Sum{Sum: &metricpb.Sum{DataPoints: numberPoints(d.DataPoints), AggregationTemporality: temporalityPB(d.Temporality), IsMonotonic: d.IsMonotonic}}
	case metricdata.Histogram[int64]:
		pm.Data = &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{DataPoints: histogramPoints(d.DataPoints), AggregationTemporality: temporalityPB(d.Temporality)}}
	case metricdata.Histogram[float64]:
		pm.Data = &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{DataPoints: histogramPoints(d.DataPoints), AggregationTemporality: temporalityPB(d.Temporality)}}
	case metricdata.ExponentialHistogram[int64]:
		pm.Data = &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{DataPoints: exponentialPoints(d.DataPoints), AggregationTemporality: temporalityPB(d.Temporality)}}
	case metricdata.ExponentialHistogram[float64]:
		pm.Data = &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{DataPoints: exponentialPoints(d.DataPoints), AggregationTemporality: temporalityPB(d.Temporality)}}
	case metricdata.Summary:
		pm.Data = &metricpb.Metric_Summary{Summary: &metricpb.Summary{DataPoints: summaryPoints(d.DataPoints)}}
	default:
		return fmt.Errorf("unknown aggregation %T", data)
	}
	return nil
}

func temporalityPB(t metricdata.Temporality) metricpb.AggregationTemporality {
	switch t {
	case metricdata.DeltaTemporality:
		return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	case metricdata.CumulativeTemporality:
		return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	}
	return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_UNSPECIFIED
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano()) //nolint:gosec // times after 1970
}

func numberPoints[N int64 | float64](dps []metricdata.DataPoint[N]) []*metricpb.NumberDataPoint {
	out := make([]*metricpb.NumberDataPoint, 0, len(dps))
	for _, dp := range dps {
		p := &metricpb.NumberDataPoint{
			Attributes:        keyValuesPB(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Exemplars:         exemplarsPB(dp.Exemplars),
		}
		switch v := any(dp.Value).(type) {
		case int64:
			p.Value = &metricpb.NumberDataPoint_AsInt{AsInt: v}
		case float64:
			p.Value = &metricpb.NumberDataPoint_AsDouble{AsDouble: v}
		}
		out = append(out, p)
	}
	return out
}

func histogramPoints[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) []*metricpb.HistogramDataPoint {
	out := make([]*metricpb.HistogramDataPoint, 0, len(dps))
	for _, dp := range dps {
		sum := float64(dp.Sum)
		p := &metricpb.HistogramDataPoint{
			Attributes:        keyValuesPB(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Count:             dp.Count,
			Sum:               &sum,
			BucketCounts:      dp.BucketCounts,
			ExplicitBounds:    dp.Bounds,
			Exemplars:         exemplarsPB(dp.Exemplars),
		}
		p.Min, p.Max = extremaPB(dp.Min), extremaPB(dp.Max)
		out = append(out, p)
	}
	return out
}

func exponentialPoints[N int64 | float64](dps []metricdata.ExponentialHistogramDataPoint[N]) []*metricpb.ExponentialHistogramDataPoint {
	out := make([]*metricpb.ExponentialHistogramDataPoint, 0, len(dps))
	for _, dp := range dps {
		sum := float64(dp.Sum)
		p := &metricpb.ExponentialHistogramDataPoint{
			Attributes:        keyValuesPB(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Count:             dp.Count,
			Sum:               &sum,
			Scale:             dp.Scale,
			ZeroCount:         dp.ZeroCount,
			ZeroThreshold:     dp.ZeroThreshold,
			Positive:          &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: dp.PositiveBucket.Offset, BucketCounts: dp.PositiveBucket.Counts},
			Negative:          &metricpb.ExponentialHistogramDataPoint_Buckets{Offset: dp.NegativeBucket.Offset, BucketCounts: dp.NegativeBucket.Counts},
			Exemplars:         exemplarsPB(dp.Exemplars),
		}
		p.Min, p.Max = extremaPB(dp.Min), extremaPB(dp.Max)
		out = append(out, p)
	}
	return out
}

func summaryPoints(dps []metricdata.SummaryDataPoint) []*metricpb.SummaryDataPoint {
	out := make([]*metricpb.SummaryDataPoint, 0, len(dps))
	for _, dp := range dps {
		p := &metricpb.SummaryDataPoint{
			Attributes:        keyValuesPB(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Count:             dp.Count,
			Sum:               dp.Sum,
		}
		for _, q := range dp.QuantileValues {
			p.QuantileValues = append(p.QuantileValues, &metricpb.SummaryDataPoint_ValueAtQuantile{Quantile: q.Quantile, Value: q.Value})
		}
		out = append(out, p)
	}
	return out
}

func extremaPB[N int64 | float64](e metricdata.Extrema[N]) *float64 {
	v, ok := e.Value()
	if !ok {
		return nil
	}
	f := float64(v)
	return &f
}

func exemplarsPB[N int64 | float64](es []metricdata.Exemplar[N]) []*metricpb.Exemplar {
	if len(es) == 0 {
		return nil
	}
	out := make([]*metricpb.Exemplar, 0, len(es))
	for _, e := range es {
		p := &metricpb.Exemplar{
			FilteredAttributes: keyValuesPB(e.FilteredAttributes),
			TimeUnixNano:       unixNano(e.Time),
			SpanId:             e.SpanID,
			TraceId:            e.TraceID,
		}
		switch v := any(e.Value).(type) {
		case int64:
			p.Value = &metricpb.Exemplar_AsInt{AsInt: v}
		case float64:
			p.Value = &metricpb.Exemplar_AsDouble{AsDouble: v}
		}
		out = append(out, p)
	}
	return out
}

func keyValuesPB(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValuePB(kv.Value)})
	}
	return out
}

func anyValuePB(v attribute.Value) *commonpb.AnyValue {
	array := func(vals []*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}}
	}
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.BOOLSLICE:
		var vals []*commonpb.AnyValue
		for _, b := range v.AsBoolSlice() {
			vals = append(vals, &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}})
		}
		return array(vals)
	case attribute.INT64SLICE:
		var vals []*commonpb.AnyValue
		for _, i := range v.AsInt64Slice() {
			vals = append(vals, &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}})
		}
		return array(vals)
	case attribute.FLOAT64SLICE:
		var vals []*commonpb.AnyValue
		for _, f := range v.AsFloat64Slice() {
			vals = append(vals, &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}})
		}
		return array(vals)
	case attribute.STRINGSLICE:
		var vals []*commonpb.AnyValue
		for _, s := range v.AsStringSlice() {
			vals = append(vals, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}})
		}
		return array(vals)
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
}
