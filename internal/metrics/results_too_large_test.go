package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
)

// TestResultTooLarge counts results over their bound by tool: an allowed or
// registered tool by its name, a name a client made up as other; the tools
// precreated start at zero.
func TestResultTooLarge(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.WithToolNames("allowed"))
	m.Precreate("", nil, []string{"quiet"})
	m.ResultTooLarge("allowed", false)
	m.ResultTooLarge("live", true)
	m.ResultTooLarge("live", true)
	m.ResultTooLarge(strings.Repeat("x", 1<<20), false)
	m.ResultTooLarge("made-up", false)
	var nilMetrics *metrics.Metrics
	nilMetrics.ResultTooLarge("allowed", true) // no panic
	const want = `
mcp_server_results_too_large_total{gen_ai_tool_name="allowed"} 1
mcp_server_results_too_large_total{gen_ai_tool_name="live"} 2
mcp_server_results_too_large_total{gen_ai_tool_name="other"} 2
mcp_server_results_too_large_total{gen_ai_tool_name="quiet"} 0
`
	var got strings.Builder
	n, err := testutil.CollectAndFormat(m, expfmt.TypeTextPlain, mcpconv.MetricResultsTooLarge)
	require.NoError(t, err)
	for line := range strings.Lines(string(n)) {
		if !strings.HasPrefix(line, "#") {
			got.WriteString(line)
		}
	}
	assert.Equal(t, strings.TrimPrefix(want, "\n"), got.String())
}
