package metrics_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
)

// TestStreamsCut counts cuts by reason, every known series at zero from
// the start, and an unknown reason as other; promlint finds nothing.
func TestStreamsCut(t *testing.T) {
	t.Parallel()
	c := metrics.NewStreamsCut()
	c.Cut("write_timeout")
	c.Cut("write_timeout")
	c.Cut("init_timeout")
	c.Cut("backlog")
	c.Cut("made-up")
	const want = `
# HELP mcp_server_streams_cut_total x
# TYPE mcp_server_streams_cut_total counter
mcp_server_streams_cut_total{reason="backlog"} 1
mcp_server_streams_cut_total{reason="init_timeout"} 1
mcp_server_streams_cut_total{reason="other"} 1
mcp_server_streams_cut_total{reason="state_too_large"} 0
mcp_server_streams_cut_total{reason="write_timeout"} 2
`
	n, err := testutil.GatherAndCount(registryOf(t, c), mcpconv.MetricStreamsCut)
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	err = testutil.CollectAndCompare(c, strings.NewReader(strings.Replace(want, "x\n", helpOf(t, c)+"\n", 1)), mcpconv.MetricStreamsCut)
	require.NoError(t, err)
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func registryOf(t *testing.T, c *metrics.StreamsCut) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(c))
	return reg
}

// helpOf returns the counter's help text.
func helpOf(t *testing.T, c *metrics.StreamsCut) string {
	t.Helper()
	mfs, err := registryOf(t, c).Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 1)
	return mfs[0].GetHelp()
}

// ExampleNewStreamsCut counts the streams a Streamable HTTP endpoint cut
// off by itself (its hook, streamable.WithStreamCutHook, calls Cut with
// the cut's name), by reason; a reason it does not know counts as other.
func ExampleNewStreamsCut() {
	cuts := metrics.NewStreamsCut()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cuts)
	cuts.Cut("write_timeout")
	cuts.Cut("made-up")

	families, _ := reg.Gather()
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			if v := m.GetCounter().GetValue(); v > 0 {
				fmt.Println(mf.GetName(), m.GetLabel()[0].GetValue(), v)
			}
		}
	}
	// Output:
	// mcp_server_streams_cut_total other 1
	// mcp_server_streams_cut_total write_timeout 1
}
