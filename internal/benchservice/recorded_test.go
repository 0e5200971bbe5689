package benchservice_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/benchservice"
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
	n, ok, err := benchservice.SumCounter(strings.NewReader(text), "mcp_server_requests_finished_total")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int64(1010), n)
	_, ok, err = benchservice.SumCounter(strings.NewReader(text), "absent_total")
	require.NoError(t, err)
	assert.False(t, ok)
	_, _, err = benchservice.SumCounter(strings.NewReader("not { exposition"), "x")
	assert.Error(t, err)
}

func TestCountRecords(t *testing.T) {
	t.Parallel()
	log := `time=1 level=INFO msg="serving MCP" url=http://127.0.0.1:1/mcp
time=2 level=INFO msg=request method=initialize request_id=0 duration=0s outcome=ok
time=3 level=WARN msg=request method=tools/call tool=x request_id=1 outcome=error
time=4 level=INFO msg=requests total=2
`
	n, err := benchservice.CountRecords(strings.NewReader(log), "request")
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
}

func TestRecordedComplete(t *testing.T) {
	t.Parallel()
	assert.True(t, benchservice.Recorded{Finished: 10, LogLines: 7, LinesDropped: 3, Traces: 1}.Complete())
	assert.False(t, benchservice.Recorded{Finished: 10, LogLines: 7, LinesDropped: 2, Traces: 1}.Complete(), "a line lost")
	assert.False(t, benchservice.Recorded{Finished: 10, LogLines: 10}.Complete(), "no traces")
	assert.Contains(t, benchservice.Recorded{Finished: 10, LogLines: 10, Traces: 3}.String(), "every request recorded")
}
