package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// maxStartMetricsLines bounds /metrics of vigil at start with its default
// flags: 375 lines since the request durations appear at first use (734
// before; 1,478 when every series of every known method and transport was
// created at zero, issue 55).
const maxStartMetricsLines = 400

// TestMetricsAtStartCarryWhatIsServed starts vigil with its default flags
// and checks that /metrics, before any request, has the series of what it
// serves (its methods, its tools, its transport) and none of what it does
// not (tasks, skills and their directory reads, which are off, stdio),
// and no request duration (they appear at a request's first use), within
// maxStartMetricsLines lines.
func TestMetricsAtStartCarryWhatIsServed(t *testing.T) {
	svc := startService(t, "-http", "127.0.0.1:0")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	body := svcGet(t, hc, svc.base+"/metrics", http.StatusOK)
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	t.Logf("/metrics at start: %d lines", len(lines))
	assert.LessOrEqual(t, len(lines), maxStartMetricsLines)
	for _, served := range []string{
		`mcp_server_requests_started_total{mcp_method_name="tools/call"} 0`,
		`mcp_server_requests_started_total{mcp_method_name="initialize"} 0`,
		`gen_ai_tool_name="echo"`,
		`mcp_server_sessions_active{transport="streamable_http"} 0`,
	} {
		assert.Contains(t, body, served, "a series of what vigil serves, at zero")
	}
	for _, line := range lines {
		for _, unserved := range []string{`"tasks/`, `"skills/`, `"resources/directory/read"`, `transport="stdio"`, `transport="memory"`, `network_transport="pipe"`} {
			assert.NotContains(t, line, unserved, "a series of what vigil does not serve")
		}
		assert.False(t, strings.HasPrefix(line, mcpconv.MetricOperationDuration+"_"), "a request duration before any request: %s", line)
	}
}
