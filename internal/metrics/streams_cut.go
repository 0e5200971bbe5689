package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// Values of the reason label of mcp_server_streams_cut_total, the names a Streamable
// HTTP endpoint gives its cuts (see streamable.StreamCut).
const (
	cutWriteTimeout  = "write_timeout"
	cutStateTooLarge = "state_too_large"
	cutInitTimeout   = "init_timeout"
	cutBacklog       = "backlog"
)

// StreamsCut is the counter mcp_server_streams_cut_total: the streams and sessions
// an HTTP endpoint cut off by itself, by reason. Register it with the
// registry of [Metrics]. Its series exist from the start, at zero.
type StreamsCut struct {
	*prometheus.CounterVec
	known map[string]bool
}

// NewStreamsCut returns the counter, its series at zero.
func NewStreamsCut() *StreamsCut {
	c := &StreamsCut{
		CounterVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: mcpconv.MetricStreamsCut,
			Help: "Streams and sessions the Streamable HTTP endpoint cut off by itself, by reason.",
		}, []string{mcpconv.LabelReason}),
		known: map[string]bool{},
	}
	for _, r := range []string{cutWriteTimeout, cutStateTooLarge, cutInitTimeout, cutBacklog, mcpconv.LabelOther} {
		c.known[r] = true
		c.WithLabelValues(r)
	}
	return c
}

// Cut counts one cut; a reason outside the known ones counts as
// "other".
func (c *StreamsCut) Cut(reason string) {
	if !c.known[reason] {
		reason = mcpconv.LabelOther
	}
	c.WithLabelValues(reason).Inc()
}
