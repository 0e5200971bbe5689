// Package telemetry owns Vigil's observability vocabulary and instruments:
// the Prometheus metric and label names, the OpenTelemetry attribute keys of
// the MCP semantic conventions, the [Metrics] collector, and the options for
// tracing.
//
// Of Vigil it imports only the leaf vocabulary transport/protocol, whose
// codes and reasons are the known values of its labels (their String
// forms). Its methods take label values as plain strings, and the
// middleware package translates the server's types (methods, typed
// cancellation causes, drop and reject reasons, errors) into them. Library
// code here uses the OpenTelemetry API only, never the SDK, and never a
// global: no default Prometheus registry, no promauto, no otel.Set*. The
// caller creates a [Metrics] with [NewMetrics] and registers it with a
// registry of its own.
//
// Labels are bounded: a method, tool, transport, cause or reason outside its
// known set is labeled [LabelOther], and every known series is created at
// zero. The duration histograms use the OpenTelemetry MCP bucket boundaries
// ([DurationBuckets]) and can be native histograms too
// ([WithNativeHistograms]); the duration histogram and the finished counter
// carry a trace_id exemplar (renewed at most once a second per series and
// bucket, [WithExemplarInterval]), exposed with the OpenMetrics format. The
// series that requests and messages touch are resolved ahead of time, so
// recording looks up no label values.
//
// Building SDK providers from the OTEL_* environment (exporter, sampler,
// resource) lives in the subpackage otelsetup, the one library package
// allowed to import the SDK.
//
// Read ExampleNewMetrics first, then the middleware package's example, which
// wires a server to a registry.
package telemetry
