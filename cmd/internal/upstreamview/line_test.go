package upstreamview

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/gateway"
)

// TestLine: the live page's line of an upstream names its state,
// its starts, its calls by outcome in a fixed order and their mean
// latency, and nothing else.
func TestLine(t *testing.T) {
	assert.Equal(t, "upstream e: ready · starts 1", Line(gateway.UpstreamStatus{Name: "e", State: gateway.StateReady, Required: true, Starts: 1}))
	assert.Equal(t, "upstream e: ready · starts 3 · calls ok 12, tool_error 2, upstream_closed 1, not_ready 4 · mean 1.23ms",
		Line(gateway.UpstreamStatus{
			Name: "e", State: gateway.StateReady, Required: true, Starts: 3,
			Calls:       map[string]int64{"not_ready": 4, "upstream_closed": 1, "tool_error": 2, "ok": 12},
			MeanLatency: 1234567 * time.Nanosecond,
		}))
	assert.Equal(t, "upstream e: ready · starts 1 · changed since the catalog lock: a, b, c, d, e and 2 more",
		Line(gateway.UpstreamStatus{Name: "e", State: gateway.StateReady, Required: true, Starts: 1, PinChanges: []string{"a", "b", "c", "d", "e", "f", "g"}}),
		"the tools changed since the catalog lock, at most 5 named")
	assert.Equal(t, "upstream pets: ready · REST API · tools 19 · starts 2",
		Line(gateway.UpstreamStatus{Name: "pets", State: gateway.StateReady, Required: true, Starts: 2, Tools: 19, OpenAPI: true}),
		"an OpenAPI upstream, and its tools")
}
