// Package otelsetup builds OpenTelemetry SDK providers from the standard
// OTEL_* environment, for cmd/ and for users who embed Vigil: exporter
// (OTLP over HTTP, or over gRPC with [WithGRPC]; console, none), sampler,
// resource, batching, and a shutdown that flushes. It links no gRPC: OTLP
// over HTTP is posted here (the OpenTelemetry HTTP exporters import the
// OTLP collector packages, which import gRPC), configured by the same
// OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout, gzip
// compression, certificates; 429, 502, 503 and 504 retried for up to a
// minute). See [TracerProvider], and [ExportMetrics] with
// [MetricProducer] for pushing the telemetry package's metrics over OTLP
// under their OpenTelemetry names.
//
// It is the one library package allowed to import the SDK (the depguard
// rule api-only-outside-cmd exempts it); instrumentation elsewhere uses the
// OpenTelemetry API only and takes providers as options. Of Vigil it
// imports only the telemetry package (for the names of its metrics), and
// it sets no globals: installing a provider and a propagator
// (otel.SetTracerProvider, otel.SetMeterProvider, otel.SetTextMapPropagator)
// is the caller's choice.
//
// # Traces
//
// [TracerProvider] picks its exporter from OTEL_TRACES_EXPORTER:
//
//   - OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none: a no-op provider
//     (spans are not recorded, but contexts still propagate).
//   - OTEL_TRACES_EXPORTER=otlp (the default): OTLP, over
//     OTEL_EXPORTER_OTLP_PROTOCOL (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
//     "http/protobuf" (the default) or "grpc" (an error without [WithGRPC]),
//     to OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_EXPORTER_OTLP_*
//     settings.
//   - OTEL_TRACES_EXPORTER=console: human-readable JSON to standard error
//     (see [WithConsoleWriter]).
//   - Unset, with no OTLP endpoint: the fallback exporter, if given (see
//     [WithFallbackExporter]).
//   - Any other name is an error; so is a list ("otlp,console").
//
// The SDK reports an invalid OTEL_TRACES_SAMPLER through otel.Handle and
// keeps the default sampler. Installing the provider as the global one,
// and a propagator (otel.SetTracerProvider, otel.SetTextMapPropagator), is
// cmd/'s choice.
//
// # Metrics
//
// [ExportMetrics] picks its exporter from OTEL_METRICS_EXPORTER:
//
//   - OTEL_METRICS_EXPORTER unset, or none, or OTEL_SDK_DISABLED=true:
//     nothing is pushed. Unlike traces, the default is
//     not otlp: the metrics of a Vigil server are served by its Prometheus
//     registry, and pushing them too is a choice.
//   - OTEL_METRICS_EXPORTER=otlp: OTLP, over OTEL_EXPORTER_OTLP_PROTOCOL (or
//     OTEL_EXPORTER_OTLP_METRICS_PROTOCOL) "http/protobuf" (the default) or
//     "grpc" (an error without [WithGRPC]), to OTEL_EXPORTER_OTLP_ENDPOINT (or
//     OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) and the other
//     OTEL_EXPORTER_OTLP_* settings.
//   - OTEL_METRICS_EXPORTER=console: JSON to standard error (see
//     [WithConsoleWriter]).
//   - Any other value is an error (prometheus included: register the
//     metrics with a Prometheus registry of your own and serve it).
//
// OTEL_METRIC_EXPORT_INTERVAL is in milliseconds, 60000 by default; the
// periodic reader exports the producers of [WithMetricProducer].
//
// [MetricProducer] converts what its gatherer gathers at each export with
// the OpenTelemetry Prometheus bridge (histograms with their buckets,
// counters as cumulative sums, exemplars), then renames each family after
// mcpconv.OTelInstruments (mcp_server_operation_duration_seconds becomes
// mcp.server.operation.duration, unit s) and its label keys after
// mcpconv.OTelAttributeKey (mcp_method_name becomes mcp.method.name).
// An empty label value is left out (Prometheus reads it as absent;
// error.type is absent on success, on the duration as on the counts), the
// gauges in flight and active become UpDownCounters, and exemplar trace
// ids become their 16 bytes.
//
// Read ExampleTracerProvider first, then ExampleMetricProducer.
package otelsetup
