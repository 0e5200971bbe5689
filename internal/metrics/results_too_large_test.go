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

// TestResultTooLarge counts results over their bound by method and tool:
// an allowed or registered tool by its name, a name a client made up as
// other, the other methods bounded without a tool; the tools and methods
// precreated start at zero.
func TestResultTooLarge(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary(), metrics.WithToolNames("allowed"))
	m.Precreate("", []string{"tools/call", "resources/read", "prompts/get", "tools/list"}, []string{"quiet"})
	m.ResultTooLarge("tools/call", "allowed", false)
	m.ResultTooLarge("tools/call", "live", true)
	m.ResultTooLarge("tools/call", "live", true)
	m.ResultTooLarge("tools/call", strings.Repeat("x", 1<<20), false)
	m.ResultTooLarge("tools/call", "made-up", false)
	m.ResultTooLarge("resources/read", "", false)
	m.ResultTooLarge("completion/complete", "ignored", false)
	var nilMetrics *metrics.Metrics
	nilMetrics.ResultTooLarge("tools/call", "allowed", true) // no panic
	const want = `
mcp_server_results_too_large_total{gen_ai_tool_name="",mcp_method_name="completion/complete"} 1
mcp_server_results_too_large_total{gen_ai_tool_name="",mcp_method_name="prompts/get"} 0
mcp_server_results_too_large_total{gen_ai_tool_name="",mcp_method_name="resources/read"} 1
mcp_server_results_too_large_total{gen_ai_tool_name="allowed",mcp_method_name="tools/call"} 1
mcp_server_results_too_large_total{gen_ai_tool_name="live",mcp_method_name="tools/call"} 2
mcp_server_results_too_large_total{gen_ai_tool_name="other",mcp_method_name="tools/call"} 2
mcp_server_results_too_large_total{gen_ai_tool_name="quiet",mcp_method_name="tools/call"} 0
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
