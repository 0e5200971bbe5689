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
			Help: "Streams and sessions the Streamable HTTP endpoint cut off by itself. reason: write_timeout (an SSE write did not complete " +
				"within -sse-write-timeout: the client stopped reading; the stream ended, the session lives on), state_too_large " +
				"(a shared session's state over its cap: not stored, the session ended), init_timeout (a session whose client " +
				"never finished initialize expired after -init-timeout), backlog (a GET stream whose client did not take its events as " +
				"fast as they came, past the stream's bound: the stream ended, the session lives on), other.",
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
