// Package otelsetup builds OpenTelemetry SDK providers from the standard
// OTEL_* environment, for cmd/ and for users who embed Vigil: exporter
// (OTLP over HTTP or gRPC, console, none), sampler, resource, batching, and
// a shutdown that flushes. See [TracerProvider], and [MeterProvider] with
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
// Read ExampleTracerProvider first, then ExampleMetricProducer.
package otelsetup
