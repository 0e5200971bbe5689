package metrics

import (
	"slices"
	"time"
)

// Option configures [New]; a nil Option is ignored.
type Option interface{ apply(*metricsConfig) }

type optionFunc func(*metricsConfig)

func (f optionFunc) apply(c *metricsConfig) { f(c) }

type metricsConfig struct {
	native         bool
	maxNative      uint32
	requestMethods []string
	clientMethods  []string
	tools          []string
	errorTypes     []string
	upstreams      []string // nil: no upstream label
	exemplarEvery  time.Duration
}

// DefaultMaxNativeBuckets bounds the buckets of a native histogram when
// [WithNativeHistograms] is given 0.
const DefaultMaxNativeBuckets = 160

// DurationBuckets are the bucket boundaries, in seconds, of both duration
// histograms: the explicit boundaries the OpenTelemetry MCP semantic
// conventions advise for mcp.server.operation.duration and
// mcp.server.session.duration.
func DurationBuckets() []float64 {
	return []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
}

// WithNativeHistograms makes both duration histograms native histograms too
// (bucket factor 1.1), kept alongside the classic semconv buckets so that
// scrapers without native-histogram support still see them. maxBuckets
// bounds the native buckets of each series, since observed values depend on
// outside input; 0 means [DefaultMaxNativeBuckets]. Native histograms are
// only exposed in the protobuf exposition format.
func WithNativeHistograms(maxBuckets uint32) Option {
	return optionFunc(func(c *metricsConfig) {
		c.native = true
		c.maxNative = maxBuckets
		if c.maxNative == 0 {
			c.maxNative = DefaultMaxNativeBuckets
		}
	})
}

// WithMethods adds request methods to the known set (the MCP client-to-server
// methods by default). A method outside the set is labeled "other".
func WithMethods(methods ...string) Option {
	return optionFunc(func(c *metricsConfig) { c.requestMethods = appendNew(c.requestMethods, methods...) })
}

// WithClientMethods adds server-to-client request methods to the known set of
// mcp_server_pending_client_requests_failed_total (roots/list, sampling/createMessage,
// elicitation/create, ping and tasks/* by default).
func WithClientMethods(methods ...string) Option {
	return optionFunc(func(c *metricsConfig) { c.clientMethods = appendNew(c.clientMethods, methods...) })
}

// WithToolNames sets the initial tool-name allow-list; see
// [Metrics.SetToolNames].
func WithToolNames(names ...string) Option {
	return optionFunc(func(c *metricsConfig) { c.tools = append([]string(nil), names...) })
}

// DefaultExemplarInterval is how often, at most, a trace id becomes the
// exemplar of one series (see [WithExemplarInterval]).
const DefaultExemplarInterval = time.Second

// WithExemplarInterval sets how often, at most, the trace id of a request
// becomes an exemplar: of the finished count of its series, and of the
// duration bucket it falls in (each bucket on its own, so that a slow
// request still gets its exemplar among many fast ones). Prometheus keeps
// one exemplar per counter and bucket, and scrapes every few seconds, so
// attaching one to every observation only costs time; d <= 0 does so
// anyway. The default is [DefaultExemplarInterval].
func WithExemplarInterval(d time.Duration) Option {
	return optionFunc(func(c *metricsConfig) { c.exemplarEvery = d })
}

// WithErrorTypes adds error_type values (JSON-RPC codes in decimal, as a
// handler of this server may answer with) to the known set; others are
// labeled _OTHER.
func WithErrorTypes(types ...string) Option {
	return optionFunc(func(c *metricsConfig) { c.errorTypes = appendNew(c.errorTypes, types...) })
}

// WithUpstreams labels the request duration with upstream too, for a
// gateway whose upstream MCP servers are names: the upstream a tools/call's
// tool is forwarded to ([RequestEnd.Upstream]), empty for a tool served
// here and for other methods, other for a name not in names.
func WithUpstreams(names ...string) Option {
	return optionFunc(func(c *metricsConfig) { c.upstreams = appendNew([]string{}, names...) })
}

// appendNew appends the values of add that dst lacks, in order.
func appendNew(dst []string, add ...string) []string {
	for _, v := range add {
		if !slices.Contains(dst, v) {
			dst = append(dst, v)
		}
	}
	return dst
}
