// Package telemetry configures Vigil's Prometheus metrics: how the
// collector of an MCP server is tuned ([MetricsConfig], given to
// middleware.WithMetricsConfig: native histograms, more methods, the
// exemplar interval, ...), the transport names a server is served on
// ([TransportStreamableHTTP], ...) and the histograms' boundaries
// ([DurationBuckets]). The middleware package's NewInstrumentation builds and
// registers the collector; the names of the metrics, labels and span
// attributes are documented in docs/operations.md, and are fixed, since
// dashboards and alert rules refer to them.
//
// Labels are bounded: a method, tool, transport, cause or reason outside
// its known set is labeled "other", and the series of what a server
// serves (its methods, tools and transports) are created at zero when the
// instrumentation first serves it. The duration histograms use the
// OpenTelemetry MCP bucket boundaries ([DurationBuckets]) and can be
// native histograms too ([MetricsConfig.NativeHistograms]); the duration histogram
// and the finished counter carry a trace_id exemplar (renewed at most once
// a second per series and bucket, [MetricsConfig.ExemplarInterval]), exposed with
// the OpenMetrics format.
//
// Of Vigil it imports only the leaf vocabulary transport/protocol and
// internal packages. Library code here uses the OpenTelemetry API only,
// never the SDK, and never a global: no default Prometheus registry, no
// promauto, no otel.Set*. Building SDK providers from the OTEL_*
// environment is the package vigil's (vigil.New).
package telemetry
