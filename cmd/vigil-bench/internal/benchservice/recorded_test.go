package benchservice_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/vigil-bench/internal/benchservice"
)

func TestCountRecords(t *testing.T) {
	t.Parallel()
	log := `time=1 level=INFO msg="serving MCP" url=http://127.0.0.1:1/mcp
time=2 level=INFO msg=request method=initialize request_id=0 duration_seconds=0 outcome=ok
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
