package metrics_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/metrics"
)

// TestUpstreamToolLabelsBounded: an upstream that lists new tool names
// at every listing labels at most MaxToolLabels of them as themselves;
// a call of any other is counted "other", and the series stop growing.
func TestUpstreamToolLabelsBounded(t *testing.T) {
	u := metrics.NewUpstreams(vocabulary().Codes, []string{"u"}, nil, func(string) string { return metrics.StateReady })
	names := func(from, n int) []string {
		var out []string
		for i := from; i < from+n; i++ {
			out = append(out, "t"+strconv.Itoa(i))
		}
		return out
	}
	lines := func() int {
		text, err := testutil.CollectAndFormat(u, expfmt.TypeTextPlain, "mcp_gateway_upstream_calls_total")
		require.NoError(t, err)
		return strings.Count(string(text), "\nmcp_gateway_upstream_calls_total{")
	}
	base := lines()
	u.Tools("u", names(0, 100))
	perTool := (lines() - base) / 100
	require.Positive(t, perTool)
	u.Tools("u", names(100, 100)) // a renaming listing: 28 more fit
	u.Tools("u", names(200, 1000))
	assert.Equal(t, base+perTool*metrics.MaxToolLabels, lines(), "128 tools labeled, no more")

	u.Called("u", "tools/call", "t5", "ok", "", "", 0)
	u.Called("u", "tools/call", "t150", "ok", "", "", 0)
	text, err := testutil.CollectAndFormat(u, expfmt.TypeTextPlain, "mcp_gateway_upstream_calls_total")
	require.NoError(t, err)
	assert.Contains(t, string(text), `gen_ai_tool_name="t5",mcp_method_name="tools/call",outcome="ok",upstream="u"} 1`)
	assert.Contains(t, string(text), `gen_ai_tool_name="other",mcp_method_name="tools/call",outcome="ok",upstream="u"} 1`)
	assert.NotContains(t, string(text), `"t150"`)
}

// TestUpstreamEndpointLabelsBounded: a call through a catalog endpoint is
// counted under its name, one through the default endpoint under an
// empty endpoint (none, to Prometheus); past MaxEndpointLabels names
// (catalogs reloaded with new ones) a call is counted "other", so the
// series stop growing.
func TestUpstreamEndpointLabelsBounded(t *testing.T) {
	u := metrics.NewUpstreams(vocabulary().Codes, []string{"u"}, nil, nil)
	u.Tools("u", []string{"t"})
	u.Called("u", "tools/call", "t", "ok", "", "", 0)
	u.Called("u", "tools/call", "t", "ok", "", "team-a", 0)
	u.Called("u", "tools/call", "t", "ok", "", "team-a", 0)
	for i := range metrics.MaxEndpointLabels + 10 {
		u.Called("u", "tools/call", "t", "error", "", "e"+strconv.Itoa(i), 0)
	}
	text, err := testutil.CollectAndFormat(u, expfmt.TypeTextPlain, "mcp_gateway_upstream_calls_total")
	require.NoError(t, err)
	s := string(text)
	assert.Contains(t, s, `{endpoint="",gen_ai_tool_name="t",mcp_method_name="tools/call",outcome="ok",upstream="u"} 1`)
	assert.Contains(t, s, `{endpoint="team-a",gen_ai_tool_name="t",mcp_method_name="tools/call",outcome="ok",upstream="u"} 2`)
	assert.Contains(t, s, `{endpoint="other",gen_ai_tool_name="t",mcp_method_name="tools/call",outcome="error",upstream="u"} 11`, "team-a and 63 more are labeled as themselves")
	assert.Equal(t, metrics.MaxEndpointLabels-1, strings.Count(s, `outcome="error",upstream="u"} 1`+"\n"), "e0 to e62, each once")
	assert.NotContains(t, s, `endpoint="e63"`)
}

// TestUpstreamToolSeriesAsLabeled: a listed tool's calls through the
// default endpoint, recorded through the series made with it, land in
// the series their labels name, duration included, as the calls of an
// endpoint or with an error type do: each outcome once, not_ready's
// duration not observed.
func TestUpstreamToolSeriesAsLabeled(t *testing.T) {
	u := metrics.NewUpstreams(vocabulary().Codes, []string{"u"}, nil, nil)
	u.Tools("u", []string{"t"})
	u.Called("u", "tools/call", "t", "ok", "", "", 2*time.Millisecond)
	u.Called("u", "tools/call", "t", "ok", "", "", 3*time.Millisecond)
	u.Called("u", "tools/call", "t", "not_ready", "", "", time.Second)
	u.Called("u", "tools/call", "t", "tool_error", "tool_error", "", time.Millisecond)
	u.Called("u", "tools/call", "t", "cancelled", "cancelled", "", time.Millisecond)
	u.Called("u", "tools/call", "t", "ok", "", "team-a", time.Millisecond)
	text, err := testutil.CollectAndFormat(u, expfmt.TypeTextPlain, "mcp_gateway_upstream_calls_total", "mcp_client_operation_duration_seconds")
	require.NoError(t, err)
	s := string(text)
	for _, want := range []string{
		`mcp_gateway_upstream_calls_total{endpoint="",gen_ai_tool_name="t",mcp_method_name="tools/call",outcome="ok",upstream="u"} 2`,
		`mcp_gateway_upstream_calls_total{endpoint="",gen_ai_tool_name="t",mcp_method_name="tools/call",outcome="not_ready",upstream="u"} 1`,
		`mcp_gateway_upstream_calls_total{endpoint="",gen_ai_tool_name="t",mcp_method_name="tools/call",outcome="tool_error",upstream="u"} 1`,
		`mcp_gateway_upstream_calls_total{endpoint="",gen_ai_tool_name="t",mcp_method_name="tools/call",outcome="cancelled",upstream="u"} 1`,
		`mcp_gateway_upstream_calls_total{endpoint="team-a",gen_ai_tool_name="t",mcp_method_name="tools/call",outcome="ok",upstream="u"} 1`,
		`mcp_client_operation_duration_seconds_sum{error_type="",gen_ai_tool_name="t",mcp_method_name="tools/call",upstream="u"} 0.006`,
		`mcp_client_operation_duration_seconds_count{error_type="",gen_ai_tool_name="t",mcp_method_name="tools/call",upstream="u"} 3`,
		`mcp_client_operation_duration_seconds_count{error_type="tool_error",gen_ai_tool_name="t",mcp_method_name="tools/call",upstream="u"} 1`,
	} {
		assert.Contains(t, s, want+"\n")
	}
	assert.Equal(t, 6, strings.Count(s, `gen_ai_tool_name="t",mcp_method_name="tools/call",outcome=`)-1, "ok, error, cancelled, upstream_closed, not_ready, tool_error at the default endpoint, and ok at team-a")
}
