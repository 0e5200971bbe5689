package middleware_test

import (
	"context"
	"regexp"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// TestExemplarsCarryTraceID serves a session whose context holds a span
// context, as the Tracing middleware leaves it, and checks the OpenMetrics
// exposition: the finished counter and the duration bucket carry its
// trace_id when it is sampled, and nothing when it is not.
func TestExemplarsCarryTraceID(t *testing.T) {
	t.Parallel()
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	tid, err := trace.TraceIDFromHex(traceID)
	require.NoError(t, err)
	sid, err := trace.SpanIDFromHex("b7ad6b7169203331")
	require.NoError(t, err)

	tests := []struct {
		name    string
		flags   trace.TraceFlags
		present bool
	}{
		{name: "sampled", flags: trace.FlagsSampled, present: true},
		{name: "not sampled", flags: 0, present: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: tt.flags})
				r := newRig(t, nil).startCtx(trace.ContextWithSpanContext(context.Background(), sc), nil)
				r.Initialize("", nil)
				r.SendCallTool(2, "echo", nil)
				require.Nil(t, r.RecvResponseTo(2).Error)
				r.close()

				text, err := testutil.CollectAndFormat(r.m, expfmt.TypeOpenMetrics,
					mcpconv.MetricRequestsFinished, mcpconv.MetricOperationDuration)
				require.NoError(t, err)
				counter := regexp.MustCompile(`(?m)^mcp_server_requests_finished_total\{error_type="",gen_ai_tool_name="echo",mcp_method_name="tools/call",outcome="ok",rpc_response_status_code=""\} 1\.0 # \{trace_id="` + traceID + `"\} 1\.0 [0-9.e+]+$`)
				bucket := regexp.MustCompile(`(?m)^mcp_server_operation_duration_seconds_bucket\{error_type="",gen_ai_tool_name="echo",mcp_method_name="tools/call",mcp_protocol_version="2025-11-25",network_protocol_name="",network_transport="pipe",rpc_response_status_code="",le="0\.01"\} 1 # \{trace_id="` + traceID + `"\} 0\.0 [0-9.e+]+$`)
				anyExemplar := regexp.MustCompile(`# \{trace_id=`)
				if tt.present {
					assert.Regexp(t, counter, string(text))
					assert.Regexp(t, bucket, string(text))
				} else {
					assert.NotRegexp(t, anyExemplar, string(text))
				}
			})
		})
	}
}
