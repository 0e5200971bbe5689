package telemetry

import (
	"time"

	"github.com/vigil-mcp/vigil/internal/metrics"
)

// MetricsConfig tunes the metrics of an MCP server (given to
// middleware.WithMetricsConfig): which label values are known ahead, and
// how the histograms and exemplars are kept. Its zero value is the
// default. A label value outside its known set is labeled "other"
// (error_type: _OTHER), so that what clients send never makes a series;
// a tool is labeled with its name once registered with the server.
type MetricsConfig struct {
	// Methods adds request methods to the known set (the MCP
	// client-to-server methods of both eras by default).
	Methods []string
	// ClientMethods adds server-to-client request methods to the known
	// set of mcp_server_pending_client_requests_failed_total (roots/list,
	// sampling/createMessage, elicitation/create, ping and tasks/* by
	// default).
	ClientMethods []string
	// ErrorTypes adds error_type values (JSON-RPC codes in decimal, as a
	// handler of this server may answer with) to the known set.
	ErrorTypes []string
	// Upstreams, for a gateway (package gateway) whose upstream MCP
	// servers are names, labels the request duration with upstream too: a
	// tools/call with the upstream its tool is forwarded to
	// (server.Tool.Upstream), other requests with "". nil: no upstream
	// label.
	Upstreams []string
	// ExemplarInterval is how often, at most, the trace id of a request
	// becomes an exemplar: of the finished count of its series, and of the
	// duration bucket it falls in (each bucket on its own, so that a slow
	// request still gets its exemplar among many fast ones). 0 means
	// one a second; a negative interval attaches one to every
	// observation, which only costs time, since Prometheus keeps one
	// exemplar per counter and bucket.
	ExemplarInterval time.Duration
	// NativeHistograms makes both duration histograms native histograms
	// too (bucket factor 1.1), kept alongside the classic semconv buckets
	// so that scrapers without native-histogram support still see them;
	// they are only exposed in the protobuf exposition format.
	NativeHistograms bool
	// MaxNativeBuckets bounds the native buckets of each series, since
	// observed values depend on outside input; 0 means 160.
	MaxNativeBuckets uint32
}

// Values of the transport label, to name the transport a server is
// served on (middleware's Instrumentation.ConnServer).
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable_http"
	TransportMemory         = "memory"
)

// DurationBuckets are the bucket boundaries, in seconds, of both duration
// histograms: the explicit boundaries the OpenTelemetry MCP semantic
// conventions advise for mcp.server.operation.duration and
// mcp.server.session.duration.
func DurationBuckets() []float64 { return metrics.DurationBuckets() }
