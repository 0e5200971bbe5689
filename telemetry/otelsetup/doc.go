// Package otelsetup builds OpenTelemetry SDK providers from the standard
// OTEL_* environment, for cmd/ and for users who embed Vigil: exporter
// (OTLP over HTTP or gRPC, console, none), sampler, resource, batching, and
// a shutdown that flushes. See [TracerProvider].
//
// It is the one library package allowed to import the SDK (the depguard
// rule api-only-outside-cmd exempts it); instrumentation elsewhere uses the
// OpenTelemetry API only and takes providers as options. It imports no Vigil
// package and sets no globals: installing the provider and a propagator
// (otel.SetTracerProvider, otel.SetTextMapPropagator) is the caller's
// choice.
//
// Read ExampleTracerProvider first.
package otelsetup
