package telemetry

import (
	"time"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
)

// MetricsOption configures the metrics of an MCP server (through
// middleware.WithMetricsOptions); a nil MetricsOption is ignored.
type MetricsOption = metrics.Option

// Values of the transport label, to name the transport a server is
// served on (middleware's Instrumentation.ConnServer).
const (
	TransportStdio          = mcpconv.TransportStdio
	TransportStreamableHTTP = mcpconv.TransportStreamableHTTP
	TransportMemory         = mcpconv.TransportMemory
)

// DefaultMaxNativeBuckets bounds the buckets of a native histogram when
// [WithNativeHistograms] is given 0.
const DefaultMaxNativeBuckets = metrics.DefaultMaxNativeBuckets

// DefaultExemplarInterval is how often, at most, a trace id becomes the
// exemplar of one series (see [WithExemplarInterval]).
const DefaultExemplarInterval = metrics.DefaultExemplarInterval

// DurationBuckets are the bucket boundaries, in seconds, of both duration
// histograms: the explicit boundaries the OpenTelemetry MCP semantic
// conventions advise for mcp.server.operation.duration and
// mcp.server.session.duration.
func DurationBuckets() []float64 { return metrics.DurationBuckets() }

// WithNativeHistograms makes both duration histograms native histograms too
// (bucket factor 1.1), kept alongside the classic semconv buckets so that
// scrapers without native-histogram support still see them. maxBuckets
// bounds the native buckets of each series, since observed values depend on
// outside input; 0 means [DefaultMaxNativeBuckets]. Native histograms are
// only exposed in the protobuf exposition format.
func WithNativeHistograms(maxBuckets uint32) MetricsOption {
	return metrics.WithNativeHistograms(maxBuckets)
}

// WithMethods adds request methods to the known set (the MCP client-to-server
// methods by default). A method outside the set is labeled "other".
func WithMethods(methods ...string) MetricsOption { return metrics.WithMethods(methods...) }

// WithClientMethods adds server-to-client request methods to the known set of
// mcp_server_pending_client_requests_failed_total (roots/list, sampling/createMessage,
// elicitation/create, ping and tasks/* by default).
func WithClientMethods(methods ...string) MetricsOption { return metrics.WithClientMethods(methods...) }

// WithToolNames sets the initial allow-list of the tool names that label
// gen_ai_tool_name as they are (besides the tools registered with the
// server, which are labeled as themselves anyway); any other tool is
// labeled "other".
func WithToolNames(names ...string) MetricsOption { return metrics.WithToolNames(names...) }

// WithExemplarInterval sets how often, at most, the trace id of a request
// becomes an exemplar: of the finished count of its series, and of the
// duration bucket it falls in (each bucket on its own, so that a slow
// request still gets its exemplar among many fast ones). Prometheus keeps
// one exemplar per counter and bucket, and scrapes every few seconds, so
// attaching one to every observation only costs time; d <= 0 does so
// anyway. The default is [DefaultExemplarInterval].
func WithExemplarInterval(d time.Duration) MetricsOption { return metrics.WithExemplarInterval(d) }

// WithErrorTypes adds error_type values (JSON-RPC codes in decimal, as a
// handler of this server may answer with) to the known set; others are
// labeled _OTHER.
func WithErrorTypes(types ...string) MetricsOption { return metrics.WithErrorTypes(types...) }

// WithUpstreams labels the request duration with upstream too, for a
// gateway (package gateway) whose upstream MCP servers are names: a
// tools/call is labeled with the upstream its tool is forwarded to
// (server.Tool.Upstream), other requests with "". The label's values are
// names, "" and "other": bounded by the operator's configuration.
func WithUpstreams(names ...string) MetricsOption { return metrics.WithUpstreams(names...) }
