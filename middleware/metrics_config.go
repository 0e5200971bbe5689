package middleware

import (
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/telemetry"
)

// metricsOptions turns what WithMetricsConfig was given into the options
// of the collector.
func metricsOptions(mc telemetry.MetricsConfig) []metrics.Option {
	opts := []metrics.Option{
		metrics.WithMethods(mc.Methods...),
		metrics.WithClientMethods(mc.ClientMethods...),
		metrics.WithErrorTypes(mc.ErrorTypes...),
	}
	if mc.Upstreams != nil {
		opts = append(opts, metrics.WithUpstreams(mc.Upstreams...))
	}
	if mc.ExemplarInterval != 0 {
		opts = append(opts, metrics.WithExemplarInterval(max(mc.ExemplarInterval, 0)))
	}
	if mc.NativeHistograms {
		opts = append(opts, metrics.WithNativeHistograms(mc.MaxNativeBuckets))
	}
	return opts
}
