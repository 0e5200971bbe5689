package middleware_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Series keys used by the scenarios.
const (
	startedCall  = `mcp_server_requests_started_total{mcp_method_name="tools/call"}`
	startedInit  = `mcp_server_requests_started_total{mcp_method_name="initialize"}`
	finishedInit = `mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="",mcp_method_name="initialize",outcome="ok"}`
	durInit      = `mcp_server_operation_duration_seconds_count{gen_ai_tool_name="",mcp_method_name="initialize"}`
	sessionCount = `mcp_server_session_duration_seconds_count{cause="transport_close",transport="memory"}`
	sessionSum   = `mcp_server_session_duration_seconds_sum{cause="transport_close",transport="memory"}`
)

// finished is the key of a finished count in series; an errType that is a
// JSON-RPC code (a server error) is also the status code.
func finished(errType, tool, method, outcome string) string {
	status := ""
	if strings.HasPrefix(errType, "-3") {
		status = `,rpc_response_status_code="` + errType + `"`
	}
	return `mcp_server_requests_finished_total{error_type="` + errType + `",gen_ai_tool_name="` + tool + `",mcp_method_name="` + method +
		`",outcome="` + outcome + `"` + status + `}`
}

// finishedOutcome is the sum of the finished counts in got of method and
// outcome, over tool, error type and status code.
func finishedOutcome(got map[string]float64, method, outcome string) float64 {
	var n float64
	for k, v := range got {
		if strings.HasPrefix(k, "mcp_server_requests_finished_total{") &&
			strings.Contains(k, `,mcp_method_name="`+method+`",`) && strings.Contains(k, `,outcome="`+outcome+`"`) {
			n += v
		}
	}
	return n
}

// fault is the key of the finished count of a caller's fault: an error
// without error_type, the code as the status code.
func fault(code, tool, method string) string {
	return `mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="` + tool + `",mcp_method_name="` + method +
		`",outcome="error",rpc_response_status_code="` + code + `"}`
}

// durCount is the key of a duration count in series: one per method and
// tool label, whatever the outcome (series sums the error types and status
// codes of the duration).
func durCount(tool, method string) string {
	return `mcp_server_operation_duration_seconds_count{gen_ai_tool_name="` + tool + `",mcp_method_name="` + method + `"}`
}

func durSum(tool, method string) string {
	return `mcp_server_operation_duration_seconds_sum{gen_ai_tool_name="` + tool + `",mcp_method_name="` + method + `"}`
}

func cancellations(method, cause string) string {
	return `mcp_server_cancellations_total{cause="` + cause + `",mcp_method_name="` + method + `"}`
}

func drops(method, reason string) string {
	return `mcp_server_late_responses_dropped_total{mcp_method_name="` + method + `",reason="` + reason + `"}`
}

func rejected(reason string) string {
	return `mcp_server_messages_rejected_total{reason="` + reason + `"}`
}

// initialized is what a session that initialized and ended at the client's
// close records, besides its scenario.
func initialized() map[string]float64 {
	return map[string]float64{startedInit: 1, finishedInit: 1, durInit: 1, sessionCount: 1}
}

func with(base map[string]float64, more map[string]float64) map[string]float64 {
	out := maps.Clone(base)
	maps.Copy(out, more)
	return out
}

// TestMetricsScenarios runs one request per scenario over the memory
// transport and checks every series that is not zero (traffic counters
// aside, see TestTrafficCounters), so a stray count fails too.
func TestMetricsScenarios(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		extra []server.Middleware
		opts  []server.Option
		wrap  func(transport.Conn) transport.Conn
		run   func(t *testing.T, r *rig)
		want  map[string]float64
	}{
		{
			name: "ok",
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "echo", nil)
				require.Nil(t, r.RecvResponseTo(2).Error)
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("", "echo", "tools/call", "ok"): 1, durCount("echo", "tools/call"): 1,
			}),
		},
		{
			name: "a result over its bound is a tool error, counted",
			opts: []server.Option{server.WithMaxResultBytes(10)},
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "echo", nil)
				require.Contains(t, string(r.RecvResult(2)), "result too large")
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("tool_error", "echo", "tools/call", "ok"): 1, durCount("echo", "tools/call"): 1,
				`mcp_server_results_too_large_total{gen_ai_tool_name="echo",mcp_method_name="tools/call"}`: 1,
			}),
		},
		{
			name: "a resources/read result over its bound is -32603, counted as result_too_large",
			opts: []server.Option{server.WithMaxResultBytes(10)},
			run: func(t *testing.T, r *rig) {
				require.NoError(t, r.srv.AddResource(server.Resource{URI: "test://big", Name: "big"},
					func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
						return &server.ReadResourceResult{Contents: []*server.ResourceContents{{Text: strings.Repeat("x", 100)}}}, nil
					}))
				r.Initialize("", nil)
				r.Request(2, "resources/read", map[string]any{"uri": "test://big"})
				resp := r.RecvResponseTo(2)
				require.NotNil(t, resp.Error)
				require.Equal(t, int64(protocol.CodeInternal), resp.Error.Code)
				r.close()
			},
			want: with(initialized(), map[string]float64{
				`mcp_server_requests_started_total{mcp_method_name="resources/read"}`:                      1,
				`mcp_server_results_too_large_total{gen_ai_tool_name="",mcp_method_name="resources/read"}`: 1,

				`mcp_server_requests_finished_total{error_type="result_too_large",gen_ai_tool_name="",mcp_method_name="resources/read",outcome="error",rpc_response_status_code="-32603"}`: 1,
				durCount("", "resources/read"): 1,
			}),
		},
		{
			name: "duration runs from receipt to the written response",
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "sleep", nil)
				require.Nil(t, r.RecvResponseTo(2).Error)
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("", "sleep", "tools/call", "ok"): 1,
				durCount("sleep", "tools/call"): 1, durSum("sleep", "tools/call"): 1.5,
				sessionSum: 1.5,
			}),
		},
		{
			name: "JSON-RPC error: unknown tool is labeled other",
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "no-such-tool", nil)
				resp := r.RecvResponseTo(2)
				require.NotNil(t, resp.Error)
				assert.Equal(t, int64(protocol.CodeInvalidParams), resp.Error.Code)
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, fault("-32602", "other", "tools/call"): 1, durCount("other", "tools/call"): 1,
			}),
		},
		{
			name: "unknown method is labeled other",
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.Request(2, "no/such-method", nil)
				resp := r.RecvResponseTo(2)
				require.NotNil(t, resp.Error)
				assert.Equal(t, int64(protocol.CodeMethodNotFound), resp.Error.Code)
				r.close()
			},
			want: with(initialized(), map[string]float64{
				`mcp_server_requests_started_total{mcp_method_name="other"}`: 1,
				fault("-32601", "", "other"):                                 1,
				durCount("", "other"):                                        1,
			}),
		},
		{
			name: "tool error is answered: ok with error_type tool_error",
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "fail", nil)
				require.Nil(t, r.RecvResponseTo(2).Error)
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("tool_error", "fail", "tools/call", "ok"): 1, durCount("fail", "tools/call"): 1,
			}),
		},
		{
			name: "arguments the tool's schema refuses: ok with error_type invalid_arguments",
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "strict", `{"n":1,"pad":"x"}`)
				require.Contains(t, string(r.RecvResult(2)), `"isError":true`)
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("invalid_arguments", "strict", "tools/call", "ok"): 1, durCount("strict", "tools/call"): 1,
			}),
		},
		{
			name: "panic is answered -32603",
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "panic", nil)
				resp := r.RecvResponseTo(2)
				require.NotNil(t, resp.Error)
				assert.Equal(t, int64(protocol.CodeInternal), resp.Error.Code)
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("-32603", "panic", "tools/call", "error"): 1, durCount("panic", "tools/call"): 1,
			}),
		},
		{
			name: "client cancel",
			run: func(_ *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "block", nil)
				synctest.Wait()
				r.Notify("notifications/cancelled", map[string]any{"requestId": 2, "reason": "changed my mind"})
				synctest.Wait()
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("cancelled", "block", "tools/call", "cancelled"): 1, durCount("block", "tools/call"): 1,
				cancellations("tools/call", "client_cancel"): 1, drops("tools/call", "cancelled"): 1,
			}),
		},
		{
			name: "transport close",
			run: func(_ *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "block", nil)
				synctest.Wait()
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("cancelled", "block", "tools/call", "cancelled"): 1, durCount("block", "tools/call"): 1,
				cancellations("tools/call", "transport_close"): 1, drops("tools/call", "writer_closed"): 1,
			}),
		},
		{
			name: "shutdown",
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "block", nil)
				synctest.Wait()
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				require.ErrorIs(t, r.srv.Shutdown(ctx), context.DeadlineExceeded)
				require.ErrorIs(t, r.Wait(), server.ErrServerClosed)
				_ = r.Close()
			},
			want: map[string]float64{
				startedInit: 1, finishedInit: 1, durInit: 1,
				startedCall: 1, finished("cancelled", "block", "tools/call", "cancelled"): 1,
				durCount("block", "tools/call"): 1, durSum("block", "tools/call"): 1,
				cancellations("tools/call", "shutdown"): 1, drops("tools/call", "shutdown"): 1,
				`mcp_server_session_duration_seconds_count{cause="shutdown",transport="memory"}`: 1,
				`mcp_server_session_duration_seconds_sum{cause="shutdown",transport="memory"}`:   1,
			},
		},
		{
			name:  "timeout answered with -32001 is an error and a cancellation",
			extra: []server.Middleware{timeoutMiddleware(2 * time.Second)},
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "block", nil)
				resp := r.RecvResponseTo(2)
				require.NotNil(t, resp.Error)
				assert.Equal(t, int64(protocol.CodeRequestTimeout), resp.Error.Code)
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("-32001", "block", "tools/call", "error"): 1,
				durCount("block", "tools/call"): 1, durSum("block", "tools/call"): 2,
				cancellations("tools/call", "timeout"): 1, sessionSum: 2,
			}),
		},
		{
			name: "late response dropped: the peer vanished",
			wrap: func(c transport.Conn) transport.Conn { return &failingConn{Conn: c} },
			run: func(_ *testing.T, r *rig) {
				r.Initialize("", nil)
				synctest.Wait()
				r.failing().fail.Store(true)
				r.SendCallTool(2, "echo", nil)
				synctest.Wait()
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("dropped", "echo", "tools/call", "dropped"): 1, durCount("echo", "tools/call"): 1,
				drops("tools/call", "peer_gone"):                                                1,
				`mcp_server_transport_write_errors_total{class="peer_gone",transport="memory"}`: 1,
			}),
		},
		{
			name: "duplicate id is rejected",
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "block", nil)
				synctest.Wait()
				r.SendCallTool(2, "echo", nil)
				resp := r.RecvResponseTo(2)
				require.NotNil(t, resp.Error)
				assert.Equal(t, int64(protocol.CodeInvalidRequest), resp.Error.Code)
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("cancelled", "block", "tools/call", "cancelled"): 1, durCount("block", "tools/call"): 1,
				cancellations("tools/call", "transport_close"): 1, drops("tools/call", "writer_closed"): 1,
				rejected("duplicate_id"): 1,
			}),
		},
		{
			name: "in-flight limit rejects",
			opts: []server.Option{server.WithMaxInFlightPerSession(1)},
			run: func(t *testing.T, r *rig) {
				r.Initialize("", nil)
				r.SendCallTool(2, "block", nil)
				synctest.Wait()
				r.SendCallTool(3, "echo", nil)
				resp := r.RecvResponseTo(3)
				require.NotNil(t, resp.Error)
				assert.Equal(t, int64(protocol.CodeServerBusy), resp.Error.Code)
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("cancelled", "block", "tools/call", "cancelled"): 1, durCount("block", "tools/call"): 1,
				cancellations("tools/call", "transport_close"): 1, drops("tools/call", "writer_closed"): 1,
				rejected("in_flight_limit"): 1,
			}),
		},
		{
			name: "request before initialize is rejected",
			run: func(t *testing.T, r *rig) {
				r.SendCallTool(1, "echo", nil)
				resp := r.RecvResponseTo(1)
				require.NotNil(t, resp.Error)
				assert.Equal(t, int64(protocol.CodeInvalidRequest), resp.Error.Code)
				r.SendFrame([]byte(`not json`))
				resp, ok := r.Recv().(*transport.Response)
				require.True(t, ok)
				require.NotNil(t, resp.Error)
				assert.Equal(t, int64(protocol.CodeParseError), resp.Error.Code)
				r.close()
			},
			want: map[string]float64{
				rejected("lifecycle"): 1, rejected("parse_error"): 1, sessionCount: 1,
			},
		},
		{
			name: "pending server-to-client request fails at close",
			run: func(t *testing.T, r *rig) {
				r.Initialize("", map[string]any{"roots": map[string]any{}})
				r.SendCallTool(2, "roots", nil)
				call, ok := r.Recv().(*transport.Request)
				require.True(t, ok)
				require.Equal(t, "roots/list", call.Method)
				synctest.Wait()
				r.close()
			},
			want: with(initialized(), map[string]float64{
				startedCall: 1, finished("cancelled", "roots", "tools/call", "cancelled"): 1, durCount("roots", "tools/call"): 1,
				cancellations("tools/call", "transport_close"): 1, drops("tools/call", "writer_closed"): 1,
				`mcp_server_pending_client_requests_failed_total{mcp_method_name="roots/list"}`: 1,
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, tt.extra, tt.opts...).start(tt.wrap)
				tt.run(t, r)
				got := series(t, r.m, "_messages_total", "_bytes_total")
				assert.Equal(t, tt.want, got)
			})
		})
	}
}

// The duration of a request carries the semantic conventions' labels: its
// protocol version and its network (a pipe for the memory transport), and
// like its finished count, for an error response, its code as
// rpc_response_status_code; a caller's fault (-32602) has no error_type, a
// server error (-32603) keeps its own.
func TestMetricsSemconvLabels(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, nil).start(nil)
		r.Initialize("", nil)
		r.SendCallTool(2, "echo", nil)
		require.Nil(t, r.RecvResponseTo(2).Error)
		r.SendCallTool(3, "nope", nil)
		require.Equal(t, int64(protocol.CodeInvalidParams), r.RecvResponseTo(3).Error.Code)
		r.SendCallTool(4, "panic", nil)
		require.Equal(t, int64(protocol.CodeInternal), r.RecvResponseTo(4).Error.Code)
		r.close()

		got := allSeries(t, r.m)
		const era = `mcp_protocol_version="2025-11-25",network_protocol_name="",network_transport="pipe",`
		for key, n := range map[string]float64{
			`{error_type="",gen_ai_tool_name="",mcp_method_name="initialize",` + era + `rpc_response_status_code=""}`:                  1,
			`{error_type="",gen_ai_tool_name="echo",mcp_method_name="tools/call",` + era + `rpc_response_status_code=""}`:              1,
			`{error_type="",gen_ai_tool_name="other",mcp_method_name="tools/call",` + era + `rpc_response_status_code="-32602"}`:       1,
			`{error_type="-32603",gen_ai_tool_name="panic",mcp_method_name="tools/call",` + era + `rpc_response_status_code="-32603"}`: 1,
		} {
			assert.InDelta(t, n, got["mcp_server_operation_duration_seconds_count"+key], 0, key)
		}
		for key, n := range map[string]float64{
			`{error_type="",gen_ai_tool_name="",mcp_method_name="initialize",outcome="ok",rpc_response_status_code=""}`:                     1,
			`{error_type="",gen_ai_tool_name="echo",mcp_method_name="tools/call",outcome="ok",rpc_response_status_code=""}`:                 1,
			`{error_type="",gen_ai_tool_name="other",mcp_method_name="tools/call",outcome="error",rpc_response_status_code="-32602"}`:       1,
			`{error_type="-32603",gen_ai_tool_name="panic",mcp_method_name="tools/call",outcome="error",rpc_response_status_code="-32603"}`: 1,
		} {
			assert.InDelta(t, n, got["mcp_server_requests_finished_total"+key], 0, key)
		}
		assert.InDelta(t, 1, got[`mcp_server_session_duration_seconds_count{cause="transport_close",error_type="",transport="memory"}`], 0,
			"a session its client closed did not end in error")
	})
}
