// Package metrics is the Prometheus collector of an MCP server ([Metrics]):
// what the middleware package's instrumentation records, and what package
// telemetry configures (middleware turns a telemetry.MetricsConfig into Options).
// Users reach it only through those two packages.
//
// A leaf, it imports none of Vigil's public packages: the protocol's
// codes, reasons and versions, the known values of its labels, come as
// strings in the [Vocabulary] given to [New] (package middleware makes it).
// Its methods take label values as plain strings, and the
// middleware package translates the server's types (methods, typed
// cancellation causes, drop and reject reasons, errors) into them. Library
// code here uses the OpenTelemetry API only, never the SDK, and never a
// global: no default Prometheus registry, no promauto, no otel.Set*. The
// caller creates a [Metrics] with [New] and registers it with a
// registry of its own.
//
// Labels are bounded: a method, tool, transport, cause or reason outside its
// known set is labeled "other", and the series of what a server serves
// (its methods, tools and transports, [Metrics.Precreate]) are created at
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
// Metrics over OTLP: the Prometheus collectors are the one place requests
// are recorded. otelsetup.MetricProducer reads them at each OTLP export
// through the OpenTelemetry Prometheus bridge and names them as
// the package doc of otelsetup says: the semantic-convention
// histograms mcp.server.operation.duration and mcp.server.session.duration
// (unit s, the same buckets) with mcp.method.name, gen_ai.tool.name and
// error.type (absent on success), and the counters under names that an
// OTel Prometheus exporter renders back as the Prometheus names
// (mcp.server.cancellations with cause, ...). This design was chosen over
// recording a second set of OTel instruments beside the Prometheus ones:
// a request costs the same whether metrics are pushed or not (the
// conversion runs once per export, not per request), and /metrics and
// OTLP always agree. SDK views could not have done the renaming: they
// apply to the SDK's own instruments, not to a producer's data, and do not
// rename attribute keys.
//
// # The accounting law
//
// Every request counted by [Metrics.RequestStarted] must be ended by
// exactly one [Metrics.RequestFinished], with one of the four outcomes.
// Then, once mcp_server_requests_in_flight is zero, the started counter equals
// the sum of mcp_server_requests_finished_total over its outcomes, per method.
// mcp_server_cancellations_total and mcp_server_late_responses_dropped_total are event counters
// and are not part of that partition. The recording methods take label
// values as plain strings, so that this package depends on no Vigil
// package; the middleware package feeds them from the server's types.
package metrics
