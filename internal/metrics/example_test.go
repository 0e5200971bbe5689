package metrics_test

import (
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
)

// ExampleNew creates the collector, registers it with a registry of
// the caller's own, and records one tool call by hand, as the middleware
// package does for every request. Label values are plain strings; values
// outside the known sets become "other".
func ExampleNew() {
	m := metrics.New(vocabulary(), metrics.WithToolNames("get_weather"))
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)

	m.RequestStarted("tools/call")
	m.RequestFinished(metrics.RequestEnd{
		Method:   "tools/call",
		Tool:     "get_weather",
		Outcome:  mcpconv.OutcomeOK,
		Duration: 150 * time.Millisecond,
		// The semantic conventions' protocol version and network labels.
		ProtocolVersion: "2025-11-25",
		Transport:       mcpconv.TransportStreamableHTTP,
		TraceID:         trace.TraceID{0x4b, 0xf9, 0x2f, 0x35}, // exposed as an exemplar with OpenMetrics
	})

	text, _ := testutil.CollectAndFormat(m, expfmt.TypeTextPlain,
		mcpconv.MetricRequestsStarted, mcpconv.MetricRequestsFinished, mcpconv.MetricOperationDuration)
	for line := range strings.SplitSeq(string(text), "\n") {
		if strings.Contains(line, `"tools/call"`) && !strings.HasSuffix(line, " 0") && !strings.Contains(line, "_bucket") {
			fmt.Println(line)
		}
	}
	// Output:
	// mcp_server_operation_duration_seconds_sum{error_type="",gen_ai_tool_name="get_weather",mcp_method_name="tools/call",mcp_protocol_version="2025-11-25",network_protocol_name="http",network_transport="tcp",rpc_response_status_code=""} 0.15
	// mcp_server_operation_duration_seconds_count{error_type="",gen_ai_tool_name="get_weather",mcp_method_name="tools/call",mcp_protocol_version="2025-11-25",network_protocol_name="http",network_transport="tcp",rpc_response_status_code=""} 1
	// mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="get_weather",mcp_method_name="tools/call",outcome="ok",rpc_response_status_code=""} 1
	// mcp_server_requests_started_total{mcp_method_name="tools/call"} 1
}
