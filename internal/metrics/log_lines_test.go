package metrics_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/metrics"
)

func TestNewLogLinesDropped(t *testing.T) {
	t.Parallel()
	var dropped atomic.Uint64
	c := metrics.NewLogLinesDropped(dropped.Load)
	const want = `# HELP mcp_server_log_lines_dropped_total Log lines dropped, not written, because the log's buffer was full (the log's destination was slower than the records).
# TYPE mcp_server_log_lines_dropped_total counter
mcp_server_log_lines_dropped_total `
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want+"0\n")))
	dropped.Add(3)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want+"3\n")))
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func TestNewAuditLinesDropped(t *testing.T) {
	t.Parallel()
	var dropped atomic.Uint64
	c := metrics.NewAuditLinesDropped(dropped.Load)
	const want = `# HELP mcp_server_audit_lines_dropped_total Audit log lines (tool calls) dropped, not written, because the audit log's buffer stayed full (its destination was slower than the calls).
# TYPE mcp_server_audit_lines_dropped_total counter
mcp_server_audit_lines_dropped_total `
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want+"0\n")))
	dropped.Add(2)
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want+"2\n")))
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	assert.Empty(t, problems)
}
