package benchkit_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/benchkit"
)

func TestSumCounter(t *testing.T) {
	t.Parallel()
	text := `# HELP mcp_server_requests_finished_total Requests finished.
# TYPE mcp_server_requests_finished_total counter
mcp_server_requests_finished_total{mcp_method_name="initialize",outcome="ok"} 8
mcp_server_requests_finished_total{mcp_method_name="tools/call",outcome="ok"} 1000
mcp_server_requests_finished_total{mcp_method_name="tools/call",outcome="error"} 2
# HELP other_total Other.
# TYPE other_total counter
other_total 5
`
	n, ok, err := benchkit.SumCounter(strings.NewReader(text), "mcp_server_requests_finished_total")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int64(1010), n)
	_, ok, err = benchkit.SumCounter(strings.NewReader(text), "absent_total")
	require.NoError(t, err)
	assert.False(t, ok)
	_, _, err = benchkit.SumCounter(strings.NewReader("not { exposition"), "x")
	assert.Error(t, err)
}
