package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// Egress is the collector of what sandboxed upstreams' egress proxies
// refused, read at each collection from the gateway's counts.
type Egress struct {
	desc     *prometheus.Desc
	refusals func(add func(upstream, host, reason string, n int64))
}

// NewEgress returns the collector of refusals, which calls add with each
// upstream, host and reason refused so far and how many times (the
// gateway bounds the hosts of each upstream it names).
func NewEgress(refusals func(add func(upstream, host, reason string, n int64))) *Egress {
	return &Egress{
		desc: prometheus.NewDesc(mcpconv.MetricUpstreamEgress,
			"Connections a sandboxed stdio upstream asked its egress proxy for and was refused. upstream: its name. host: the host it asked for "+
				"(the first 32 of each upstream; other beyond). reason: not_allowed (no rule of its profile allows the host and port), "+
				"address (a private, loopback or link-local address no rule names), resolve (the name did not resolve), dial (the connection failed), "+
				"request (not a proxy request), busy (its proxy's connections at their bound).",
			[]string{mcpconv.LabelUpstream, "host", "reason"}, nil),
		refusals: refusals,
	}
}

// Describe sends the metric's description.
func (e *Egress) Describe(ch chan<- *prometheus.Desc) { ch <- e.desc }

// Collect sends the counts so far.
func (e *Egress) Collect(ch chan<- prometheus.Metric) {
	e.refusals(func(upstream, host, reason string, n int64) {
		ch <- prometheus.MustNewConstMetric(e.desc, prometheus.CounterValue, float64(n), upstream, host, reason)
	})
}
