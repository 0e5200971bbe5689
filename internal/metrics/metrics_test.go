package metrics_test

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestNewMetricsPrecreatesSeries checks that the series of no method,
// tool or transport exist at zero before anything happened, and that
// Precreate adds those of what it is given: the known request methods,
// the server-to-client methods (those of tasks only with a tasks method),
// the tools and the transport: each method's and each tool's ends and
// durations.
func TestNewMetricsPrecreatesSeries(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary())
	served := metrics.New(vocabulary())
	served.Precreate(mcpconv.TransportStdio, []string{"initialize", "ping", "tools/call", "made/up"}, []string{"echo"})
	withTasks := metrics.New(vocabulary())
	withTasks.Precreate("", []string{"tasks/get"}, nil)
	const methods = 4 // initialize, ping, tools/call and other; made/up is not a known method
	tests := []struct {
		name                 string
		bare, served, tasked int
	}{
		{mcpconv.MetricRequestsStarted, 1, methods, 2},
		{mcpconv.MetricRequestsInFlight, 1, methods, 2},
		// New: method other's -32601. Precreate: ok, cancelled and dropped of
		// initialize and ping; echo's six ends; tool other's -32602; and
		// other's -32601. With tasks: tasks/get's three and other's.
		{mcpconv.MetricRequestsFinished, 1, 2*3 + 6 + 1 + 1, 3 + 1},
		{mcpconv.MetricCancellations, 6, methods * 6, 2 * 6}, // upstream_closed a gateway's only
		{mcpconv.MetricLateResponsesDropped, 4, methods * 4, 2 * 4},
		// None: the request durations appear at a request's first use.
		{mcpconv.MetricOperationDuration, 0, 0, 0},
		{mcpconv.MetricSessionsActive, 0, 1, 0},
		{mcpconv.MetricSessionDuration, 0, 4, 0}, // no client_cancel or stream_close for sessions
		{mcpconv.MetricTransportWriteErrors, 0, 2, 0},
		{mcpconv.MetricClientRequestsFailed, 1, 5, 9}, // other; ping, roots, sampling, elicitation; tasks/*
		{mcpconv.MetricMessagesRejected, 20, 20, 20},
		{mcpconv.MetricMessagesReceived, 0, 5, 0},
		{mcpconv.MetricMessagesSent, 0, 5, 0},
		{mcpconv.MetricBytesReceived, 0, 1, 0},
		{mcpconv.MetricBytesSent, 0, 1, 0},
		{mcpconv.MetricResultsTooLarge, 0, 2, 0}, // echo and tool other
		{mcpconv.MetricQuotaRefusals, 8, 8, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.bare, testutil.CollectAndCount(m, tt.name), "New")
			assert.Equal(t, tt.served, testutil.CollectAndCount(served, tt.name), "Precreate")
			assert.Equal(t, tt.tasked, testutil.CollectAndCount(withTasks, tt.name), "Precreate with tasks")
		})
	}

	const rejected = `
# HELP mcp_server_messages_rejected_total Incoming MCP messages refused or ignored before they reached a handler, by reason.
# TYPE mcp_server_messages_rejected_total counter
mcp_server_messages_rejected_total{reason="cancel_relay_limit"} 0
mcp_server_messages_rejected_total{reason="cancel_unproven"} 0
mcp_server_messages_rejected_total{reason="duplicate_id"} 0
mcp_server_messages_rejected_total{reason="forbidden"} 0
mcp_server_messages_rejected_total{reason="frame_too_large"} 0
mcp_server_messages_rejected_total{reason="in_flight_limit"} 0
mcp_server_messages_rejected_total{reason="invalid_params"} 0
mcp_server_messages_rejected_total{reason="invalid_request"} 0
mcp_server_messages_rejected_total{reason="lifecycle"} 0
mcp_server_messages_rejected_total{reason="memory_budget"} 0
mcp_server_messages_rejected_total{reason="other"} 0
mcp_server_messages_rejected_total{reason="overloaded"} 0
mcp_server_messages_rejected_total{reason="parse_error"} 0
mcp_server_messages_rejected_total{reason="protocol_mismatch"} 0
mcp_server_messages_rejected_total{reason="session_limit"} 0
mcp_server_messages_rejected_total{reason="session_principal_mismatch"} 0
mcp_server_messages_rejected_total{reason="shutting_down"} 0
mcp_server_messages_rejected_total{reason="store_unavailable"} 0
mcp_server_messages_rejected_total{reason="unknown_response"} 0
mcp_server_messages_rejected_total{reason="unknown_session"} 0
`
	require.NoError(t, testutil.CollectAndCompare(m, strings.NewReader(rejected), mcpconv.MetricMessagesRejected))

	// The ends made at zero: those a request meets in a day's work, per
	// method and, for tools/call, per tool; the refusal of the unknown.
	const ends = `
mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="",mcp_method_name="initialize",outcome="ok",rpc_response_status_code=""} 0
mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="",mcp_method_name="other",outcome="error",rpc_response_status_code="-32601"} 0
mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="",mcp_method_name="ping",outcome="ok",rpc_response_status_code=""} 0
mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="echo",mcp_method_name="tools/call",outcome="ok",rpc_response_status_code=""} 0
mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="other",mcp_method_name="tools/call",outcome="error",rpc_response_status_code="-32602"} 0
mcp_server_requests_finished_total{error_type="-32021",gen_ai_tool_name="echo",mcp_method_name="tools/call",outcome="error",rpc_response_status_code="-32021"} 0
mcp_server_requests_finished_total{error_type="cancelled",gen_ai_tool_name="",mcp_method_name="initialize",outcome="cancelled",rpc_response_status_code=""} 0
mcp_server_requests_finished_total{error_type="cancelled",gen_ai_tool_name="",mcp_method_name="ping",outcome="cancelled",rpc_response_status_code=""} 0
mcp_server_requests_finished_total{error_type="cancelled",gen_ai_tool_name="echo",mcp_method_name="tools/call",outcome="cancelled",rpc_response_status_code=""} 0
mcp_server_requests_finished_total{error_type="dropped",gen_ai_tool_name="",mcp_method_name="initialize",outcome="dropped",rpc_response_status_code=""} 0
mcp_server_requests_finished_total{error_type="dropped",gen_ai_tool_name="",mcp_method_name="ping",outcome="dropped",rpc_response_status_code=""} 0
mcp_server_requests_finished_total{error_type="dropped",gen_ai_tool_name="echo",mcp_method_name="tools/call",outcome="dropped",rpc_response_status_code=""} 0
mcp_server_requests_finished_total{error_type="invalid_arguments",gen_ai_tool_name="echo",mcp_method_name="tools/call",outcome="ok",rpc_response_status_code=""} 0
mcp_server_requests_finished_total{error_type="tool_error",gen_ai_tool_name="echo",mcp_method_name="tools/call",outcome="ok",rpc_response_status_code=""} 0
`
	assert.Equal(t, strings.TrimPrefix(ends, "\n"), seriesText(t, served, mcpconv.MetricRequestsFinished))
}

// seriesText returns the text exposition of the family name of c without
// its comment lines.
func seriesText(t *testing.T, c prometheus.Collector, name string) string {
	t.Helper()
	text, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, name)
	require.NoError(t, err)
	var out strings.Builder
	for line := range strings.Lines(string(text)) {
		if !strings.HasPrefix(line, "#") {
			out.WriteString(line)
		}
	}
	return out.String()
}

// TestQuotaRefused counts refusals by quota, and an unknown quota as other.
func TestQuotaRefused(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary())
	m.QuotaRefused("sessions")
	m.QuotaRefused("sessions")
	m.QuotaRefused("tool_rate")
	m.QuotaRefused("made-up")
	var nilMetrics *metrics.Metrics
	nilMetrics.QuotaRefused("sessions") // no panic
	const want = `
mcp_server_quota_refusals_total{quota="bytes"} 0
mcp_server_quota_refusals_total{quota="in_flight"} 0
mcp_server_quota_refusals_total{quota="other"} 1
mcp_server_quota_refusals_total{quota="rate"} 0
mcp_server_quota_refusals_total{quota="sessions"} 2
mcp_server_quota_refusals_total{quota="tasks"} 0
mcp_server_quota_refusals_total{quota="tool_rate"} 1
mcp_server_quota_refusals_total{quota="tool_share"} 0
`
	var got strings.Builder
	n, err := testutil.CollectAndFormat(m, expfmt.TypeTextPlain, mcpconv.MetricQuotaRefusals)
	require.NoError(t, err)
	for line := range strings.Lines(string(n)) {
		if !strings.HasPrefix(line, "#") {
			got.WriteString(line)
		}
	}
	assert.Equal(t, strings.TrimPrefix(want, "\n"), got.String())
}

// TestMetricsLint runs promlint over the collector, with and without native
// histograms, after recording into every metric.
func TestMetricsLint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts []metrics.Option
	}{
		{name: "classic"},
		{name: "native", opts: []metrics.Option{metrics.WithNativeHistograms(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := metrics.New(vocabulary(), tt.opts...)
			recordAll(m)
			problems, err := testutil.CollectAndLint(m)
			require.NoError(t, err)
			assert.Empty(t, problems)
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, reg.Register(m))
			_, err = reg.Gather()
			require.NoError(t, err)
		})
	}
}

func recordAll(m *metrics.Metrics) {
	m.RequestStarted("tools/call")
	m.RequestFinished(metrics.RequestEnd{Method: "tools/call", Tool: "x", Outcome: mcpconv.OutcomeOK, Duration: time.Second, TraceID: hexTrace("0af7651916cd43dd8448eb211c80319c")})
	m.RequestCancelled("tools/call", "client_cancel")
	m.ResponseDropped("tools/call", "cancelled")
	m.SessionStarted(mcpconv.TransportStdio)
	m.SessionEnded(mcpconv.TransportStdio, "transport_close", time.Minute)
	m.WriteFailed(mcpconv.TransportStdio, "peer_gone")
	m.ClientRequestFailed("roots/list")
	m.MessageRejected(protocol.RejectDuplicateID.String())
	m.MessageReceived(mcpconv.TransportStdio, mcpconv.KindRequest, 10)
	m.MessageSent(mcpconv.TransportStdio, mcpconv.KindResponse, 20)
}

// TestLabelsAreBounded feeds values outside every known set, including
// invalid UTF-8 (on which client_golang would panic), and checks they land
// in other or _OTHER.
func TestLabelsAreBounded(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary(), metrics.WithToolNames("known"))
	bad := "\xff\xfe"
	m.RequestStarted(bad)
	m.RequestFinished(metrics.RequestEnd{Method: bad, Outcome: "weird", ErrorType: "-1", StatusCode: bad, ProtocolVersion: bad, Transport: bad})
	m.RequestStarted("tools/call")
	m.RequestFinished(metrics.RequestEnd{Method: "tools/call", Tool: bad, Outcome: mcpconv.OutcomeOK})
	m.RequestStarted("tools/call")
	m.RequestFinished(metrics.RequestEnd{Method: "tools/call", Tool: "known", Outcome: mcpconv.OutcomeOK})
	m.RequestStarted("ping")
	m.RequestFinished(metrics.RequestEnd{Method: "ping", Tool: "known", Outcome: mcpconv.OutcomeOK}) // tool ignored off tools/call
	m.RequestCancelled(bad, bad)
	m.SessionStarted("carrier-pigeon")
	m.SessionEnded("carrier-pigeon", bad, 0)
	m.ClientRequestFailed(bad)
	m.MessageRejected(bad)

	assert.Equal(t, map[string]float64{
		`mcp_server_requests_started_total{mcp_method_name="other"}`: 1,
		finishedKey("other", "", "other", "_OTHER", "_OTHER"):        1,
		`mcp_server_operation_duration_seconds_count{error_type="_OTHER",gen_ai_tool_name="",mcp_method_name="other",mcp_protocol_version="other",network_protocol_name="",network_transport="",rpc_response_status_code="_OTHER"}`: 1,
		`mcp_server_requests_started_total{mcp_method_name="tools/call"}`:                                2,
		finishedKey("tools/call", "other", mcpconv.OutcomeOK, "", ""):                                    1,
		finishedKey("tools/call", "known", mcpconv.OutcomeOK, "", ""):                                    1,
		durationKey("tools/call", "other"):                                                               1,
		durationKey("tools/call", "known"):                                                               1,
		`mcp_server_requests_started_total{mcp_method_name="ping"}`:                                      1,
		finishedKey("ping", "", mcpconv.OutcomeOK, "", ""):                                               1,
		durationKey("ping", ""):                                                                          1,
		`mcp_server_cancellations_total{cause="other",mcp_method_name="other"}`:                          1,
		`mcp_server_session_duration_seconds_count{cause="other",error_type="_OTHER",transport="other"}`: 1,
		`mcp_server_pending_client_requests_failed_total{mcp_method_name="other"}`:                       1,
		`mcp_server_messages_rejected_total{reason="other"}`:                                             1,
	}, nonZero(t, m))
	assert.Empty(t, exemplars(t, m), "invalid trace ids make no exemplar")
}

// TestSetToolNames checks that the allow-list can change while requests are
// recorded, and that a new tool's series starts at zero.
func TestSetToolNames(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary())
	m.Precreate(mcpconv.TransportStreamableHTTP, nil, nil)
	m.SetToolNames([]string{"a"})
	assert.Equal(t, 0, testutil.CollectAndCount(m, mcpconv.MetricOperationDuration), "durations appear at first use")

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				m.RequestStarted("tools/call")
				m.RequestFinished(metrics.RequestEnd{Method: "tools/call", Tool: "b", Outcome: mcpconv.OutcomeOK})
			}
		})
	}
	wg.Go(func() { m.SetToolNames([]string{"a", "b"}) })
	wg.Wait()
	m.RequestStarted("tools/call")
	m.RequestFinished(metrics.RequestEnd{Method: "tools/call", Tool: "b", Outcome: mcpconv.OutcomeOK})
	got := nonZero(t, m)
	b, other := finishedKey("tools/call", "b", mcpconv.OutcomeOK, "", ""), finishedKey("tools/call", "other", mcpconv.OutcomeOK, "", "")
	assert.GreaterOrEqual(t, got[b], float64(1), "b is labeled as itself once allowed")
	assert.InDelta(t, 401, got[b]+got[other], 0)
	assert.InDelta(t, got[b], got[durationKey("tools/call", "b")], 0, "its duration as its end")
	assert.InDelta(t, got[other], got[durationKey("tools/call", "other")], 0)
}

// TestExemplars checks that a trace id becomes the exemplar of the finished
// count and of the duration bucket, and that "" makes none.
func TestExemplars(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary())
	m.RequestStarted("ping")
	m.RequestFinished(metrics.RequestEnd{Method: "ping", Outcome: mcpconv.OutcomeOK, Duration: 30 * time.Millisecond, TraceID: hexTrace("4bf92f3577b34da6a3ce929d0e0e4736")})
	m.RequestStarted("ping")
	m.RequestFinished(metrics.RequestEnd{Method: "ping", Outcome: mcpconv.OutcomeError, ErrorType: "-32603", Duration: time.Second})
	assert.Equal(t, []string{
		`mcp_server_operation_duration_seconds{error_type="",gen_ai_tool_name="",mcp_method_name="ping",mcp_protocol_version="",network_protocol_name="",network_transport="",rpc_response_status_code=""} le=0.05 trace_id=4bf92f3577b34da6a3ce929d0e0e4736 0.03`,
		finishedKey("ping", "", mcpconv.OutcomeOK, "", "") + ` trace_id=4bf92f3577b34da6a3ce929d0e0e4736 1`,
	}, exemplars(t, m))
}

// TestExemplarFromTrace checks that RequestEnd.TraceID becomes the
// exemplar in its hex form, and that the zero TraceID makes none.
func TestExemplarFromTrace(t *testing.T) {
	t.Parallel()
	id, err := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	require.NoError(t, err)

	m := metrics.New(vocabulary())
	m.RequestStarted("ping")
	m.RequestFinished(metrics.RequestEnd{Method: "ping", Outcome: mcpconv.OutcomeOK, Duration: 30 * time.Millisecond, TraceID: id})
	assert.Equal(t, []string{
		`mcp_server_operation_duration_seconds{error_type="",gen_ai_tool_name="",mcp_method_name="ping",mcp_protocol_version="",network_protocol_name="",network_transport="",rpc_response_status_code=""} le=0.05 trace_id=4bf92f3577b34da6a3ce929d0e0e4736 0.03`,
		finishedKey("ping", "", mcpconv.OutcomeOK, "", "") + ` trace_id=4bf92f3577b34da6a3ce929d0e0e4736 1`,
	}, exemplars(t, m))

	m = metrics.New(vocabulary())
	m.RequestStarted("ping")
	m.RequestFinished(metrics.RequestEnd{Method: "ping", Outcome: mcpconv.OutcomeOK, TraceID: trace.TraceID{}})
	assert.Empty(t, exemplars(t, m))
}

// TestNativeHistograms checks the option: native buckets with factor 1.1
// (schema 3) next to the semconv buckets, bounded in number.
func TestNativeHistograms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		opts   []metrics.Option
		native bool
	}{
		{name: "classic only"},
		{name: "native", opts: []metrics.Option{metrics.WithNativeHistograms(20)}, native: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := metrics.New(vocabulary(), tt.opts...)
			m.SessionStarted(mcpconv.TransportStdio)
			m.SessionEnded(mcpconv.TransportStdio, "shutdown", 3*time.Second)
			h := histogram(t, m, mcpconv.MetricSessionDuration, `cause="shutdown",error_type="",transport="stdio"`)
			require.Len(t, h.GetBucket(), len(metrics.DurationBuckets()))
			for i, b := range h.GetBucket() {
				assert.InDelta(t, metrics.DurationBuckets()[i], b.GetUpperBound(), 0)
			}
			if tt.native {
				assert.Equal(t, int32(3), h.GetSchema())
				assert.NotEmpty(t, h.GetPositiveSpan())
			} else {
				assert.Nil(t, h.Schema)
			}
		})
	}
}

// TestNilMetrics checks that a nil *Metrics records nothing and does not
// panic.
func TestNilMetrics(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	assert.NotPanics(t, func() {
		recordAll(m)
		m.SetToolNames([]string{"x"})
		ch := make(chan prometheus.Metric, 1)
		m.Collect(ch)
		close(ch)
		assert.Empty(t, ch)
	})
}

func gather(t *testing.T, m *metrics.Metrics) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	return mfs
}

func labelsOf(m *dto.Metric) string {
	parts := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// nonZero returns the series that are not zero; histograms as _count.
func nonZero(t *testing.T, m *metrics.Metrics) map[string]float64 {
	out := map[string]float64{}
	for _, mf := range gather(t, m) {
		for _, s := range mf.GetMetric() {
			name, v := mf.GetName(), s.GetCounter().GetValue()+s.GetGauge().GetValue()
			if s.GetHistogram() != nil {
				name, v = name+"_count", float64(s.GetHistogram().GetSampleCount())
			}
			if v != 0 {
				out[name+labelsOf(s)] = v
			}
		}
	}
	return out
}

// exemplars lists every exemplar as "series [le=bound] label=value value".
func exemplars(t *testing.T, m *metrics.Metrics) []string {
	var out []string
	format := func(series string, e *dto.Exemplar) string {
		var ls []string
		for _, l := range e.GetLabel() {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		return series + " " + strings.Join(ls, ",") + " " + fmtFloat(e.GetValue())
	}
	for _, mf := range gather(t, m) {
		for _, s := range mf.GetMetric() {
			series := mf.GetName() + labelsOf(s)
			if e := s.GetCounter().GetExemplar(); e != nil {
				out = append(out, format(series, e))
			}
			for _, b := range s.GetHistogram().GetBucket() {
				if e := b.GetExemplar(); e != nil {
					out = append(out, format(series+" le="+fmtFloat(b.GetUpperBound()), e))
				}
			}
		}
	}
	return out
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func histogram(t *testing.T, m *metrics.Metrics, name, labels string) *dto.Histogram {
	for _, mf := range gather(t, m) {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			if labelsOf(s) == "{"+labels+"}" {
				return s.GetHistogram()
			}
		}
	}
	t.Fatalf("no histogram %s{%s}", name, labels)
	return nil
}

// TestToolRegistered checks that a tool the caller says is registered is
// labeled as itself without the allow-list, that an invalid name still
// becomes other, and that Precreate creates series without allowing
// names.
func TestToolRegistered(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary())
	m.Precreate(mcpconv.TransportStdio, nil, []string{"pre", "\xff"})
	assert.Equal(t, 0, testutil.CollectAndCount(m, mcpconv.MetricOperationDuration), "durations appear at first use")
	for _, e := range []metrics.RequestEnd{
		{Tool: "live", ToolRegistered: true},
		{Tool: "pre"},                            // precreated, not allowed
		{Tool: "\xff\xfe", ToolRegistered: true}, // not a label value
		{Tool: "live", ToolRegistered: false},    // the registry lost it
	} {
		e.Method, e.Outcome = "tools/call", mcpconv.OutcomeOK
		m.RequestStarted("tools/call")
		m.RequestFinished(e)
	}
	got := nonZero(t, m)
	for _, key := range []func(tool string) string{
		func(tool string) string { return durationKey("tools/call", tool) },
		func(tool string) string { return finishedKey("tools/call", tool, mcpconv.OutcomeOK, "", "") },
	} {
		assert.InDelta(t, 1, got[key("live")], 0)
		assert.InDelta(t, 3, got[key("other")], 0)
		assert.NotContains(t, got, key("pre"))
	}
}

// Traffic counts as MessageReceived and MessageSent do: an unknown
// transport as other, an unknown kind as other, SentN as n messages, and a
// nil Traffic (of nil Metrics) nothing.
func TestTraffic(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary())
	http := m.Traffic(mcpconv.TransportStreamableHTTP)
	http.Received(mcpconv.KindRequest, 100)
	http.Received(mcpconv.KindInvalid, 0)
	http.Sent(mcpconv.KindResponse, 50)
	http.Sent("weird", 7)
	http.SentN(mcpconv.KindNotification, 20, 3) // a notification multicast to three sessions
	http.SentN(mcpconv.KindNotification, 20, 0)
	m.MessageReceived(mcpconv.TransportStreamableHTTP, mcpconv.KindRequest, 10)
	m.Traffic("carrier-pigeon").Received(mcpconv.KindBatch, 3)
	assert.Equal(t, map[string]float64{
		`mcp_server_received_messages_total{kind="request",transport="streamable_http"}`:  2,
		`mcp_server_received_messages_total{kind="invalid",transport="streamable_http"}`:  1,
		`mcp_server_sent_messages_total{kind="response",transport="streamable_http"}`:     1,
		`mcp_server_sent_messages_total{kind="other",transport="streamable_http"}`:        1,
		`mcp_server_sent_messages_total{kind="notification",transport="streamable_http"}`: 3,
		`mcp_server_received_bytes_total{transport="streamable_http"}`:                    110,
		`mcp_server_sent_bytes_total{transport="streamable_http"}`:                        117,
		`mcp_server_received_messages_total{kind="batch",transport="other"}`:              1,
		`mcp_server_received_bytes_total{transport="other"}`:                              3,
	}, nonZero(t, m))

	var nilMetrics *metrics.Metrics
	assert.Nil(t, nilMetrics.Traffic(mcpconv.TransportStdio))
	assert.NotPanics(t, func() {
		nilMetrics.Traffic(mcpconv.TransportStdio).Received(mcpconv.KindRequest, 1)
		nilMetrics.Traffic(mcpconv.TransportStdio).Sent(mcpconv.KindResponse, 1)
	})
}

// The series a request ends in are cached per method, tool label and end:
// successes and failures of one tool, before and after it joins the
// allow-list, each land in their own finished count, and in the duration
// of their method, tool label, error type and status code (the semantic
// conventions' error.type and rpc.response.status_code of a failure).
func TestRequestFinishedSeriesPerOutcome(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary())
	finish := func(tool, outcome, errType string) {
		m.RequestStarted("tools/call")
		m.RequestFinished(metrics.RequestEnd{Method: "tools/call", Tool: tool, Outcome: outcome, ErrorType: errType})
	}
	finish("t", mcpconv.OutcomeOK, "")
	finish("t", mcpconv.OutcomeOK, mcpconv.ErrorTypeTool)
	finish("t", mcpconv.OutcomeError, "-32602")
	m.SetToolNames([]string{"t"})
	finish("t", mcpconv.OutcomeOK, "")
	finish("t", mcpconv.OutcomeOK, "")
	finish("", mcpconv.OutcomeOK, "")
	m.RequestStarted("ping")
	m.RequestFinished(metrics.RequestEnd{Method: "ping", Outcome: mcpconv.OutcomeOK})
	assert.Equal(t, map[string]float64{
		`mcp_server_requests_started_total{mcp_method_name="tools/call"}`:                6,
		finishedKey("tools/call", "other", mcpconv.OutcomeOK, "", ""):                    1,
		finishedKey("tools/call", "other", mcpconv.OutcomeOK, mcpconv.ErrorTypeTool, ""): 1,
		finishedKey("tools/call", "other", mcpconv.OutcomeError, "-32602", ""):           1,
		finishedKey("tools/call", "t", mcpconv.OutcomeOK, "", ""):                        2,
		finishedKey("tools/call", "", mcpconv.OutcomeOK, "", ""):                         1,
		durationKey("tools/call", "other"):                                               1,
		failedDurationKey("tools/call", "other", mcpconv.ErrorTypeTool, ""):              1,
		failedDurationKey("tools/call", "other", "-32602", ""):                           1,
		durationKey("tools/call", "t"):                                                   2,
		durationKey("tools/call", ""):                                                    1,
		`mcp_server_requests_started_total{mcp_method_name="ping"}`:                      1,
		finishedKey("ping", "", mcpconv.OutcomeOK, "", ""):                               1,
		durationKey("ping", ""):                                                          1,
	}, nonZero(t, m))
}

// Registered tools get labels of their own up to a bound; past it, and for
// an invalid label value, the tool is labeled other.
func TestRegisteredToolLabelsBounded(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary())
	const bound = 1024
	for i := range bound + 10 {
		m.RequestStarted("tools/call")
		m.RequestFinished(metrics.RequestEnd{Method: "tools/call", Tool: fmt.Sprintf("t%d", i), ToolRegistered: true, Outcome: mcpconv.OutcomeOK})
	}
	m.RequestStarted("tools/call")
	m.RequestFinished(metrics.RequestEnd{Method: "tools/call", Tool: "t0", ToolRegistered: true, Outcome: mcpconv.OutcomeOK})
	m.RequestStarted("tools/call")
	m.RequestFinished(metrics.RequestEnd{Method: "tools/call", Tool: "\xff", ToolRegistered: true, Outcome: mcpconv.OutcomeOK})
	got := nonZero(t, m)
	for _, key := range []func(tool string) string{
		func(tool string) string { return durationKey("tools/call", tool) },
		func(tool string) string { return finishedKey("tools/call", tool, mcpconv.OutcomeOK, "", "") },
	} {
		assert.InDelta(t, 2, got[key("t0")], 0, "a name already labeled keeps its label")
		assert.InDelta(t, 1, got[key(fmt.Sprintf("t%d", bound-1))], 0, "the last name within the bound")
		assert.NotContains(t, got, key(fmt.Sprintf("t%d", bound)), "the first name past the bound")
		assert.InDelta(t, 11, got[key("other")], 0, "10 past the bound and one invalid name")
	}
}

// The duration histogram carries the semantic conventions' protocol
// version and network labels, it and the finished count their error type
// and status code, each bounded; a caller's fault is an error response with a status code and no
// error type; a session ends with an error type only when it ended in
// error.
func TestSemconvLabels(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary())
	for _, v := range protocol.Versions() {
		m.RequestStarted("ping")
		m.RequestFinished(metrics.RequestEnd{Method: "ping", Outcome: mcpconv.OutcomeOK, ProtocolVersion: v, Transport: mcpconv.TransportStdio})
	}
	m.RequestStarted("tools/call")
	m.RequestFinished(metrics.RequestEnd{
		Method: "tools/call", Outcome: mcpconv.OutcomeError, StatusCode: "-32602",
		ProtocolVersion: "2025-11-25", Transport: mcpconv.TransportStreamableHTTP,
	})
	m.RequestStarted("ping")
	m.RequestFinished(metrics.RequestEnd{Method: "ping", Outcome: mcpconv.OutcomeOK, ProtocolVersion: "1999-01-01", Transport: "carrier-pigeon"})
	m.SessionEnded(mcpconv.TransportStdio, "timeout", time.Second)
	m.SessionEnded(mcpconv.TransportStdio, "transport_close", time.Second)

	got := nonZero(t, m)
	for _, v := range protocol.Versions() {
		assert.Contains(t, got, `mcp_server_operation_duration_seconds_count{error_type="",gen_ai_tool_name="",mcp_method_name="ping",mcp_protocol_version="`+v+`",network_protocol_name="",network_transport="pipe",rpc_response_status_code=""}`)
	}
	assert.Contains(t, got, `mcp_server_operation_duration_seconds_count{error_type="",gen_ai_tool_name="",mcp_method_name="tools/call",mcp_protocol_version="2025-11-25",network_protocol_name="http",network_transport="tcp",rpc_response_status_code="-32602"}`,
		"a caller's fault: its duration with a status code, no error type")
	assert.Contains(t, got, `mcp_server_operation_duration_seconds_count{error_type="",gen_ai_tool_name="",mcp_method_name="ping",mcp_protocol_version="other",network_protocol_name="",network_transport="",rpc_response_status_code=""}`)
	assert.InDelta(t, float64(len(protocol.Versions())+1), got[finishedKey("ping", "", mcpconv.OutcomeOK, "", "")], 0)
	assert.InDelta(t, 1, got[finishedKey("tools/call", "", mcpconv.OutcomeError, "", "-32602")], 0, "a caller's fault: a status code, no error type")
	assert.Contains(t, got, `mcp_server_session_duration_seconds_count{cause="timeout",error_type="timeout",transport="stdio"}`)
	assert.Contains(t, got, `mcp_server_session_duration_seconds_count{cause="transport_close",error_type="",transport="stdio"}`)
}

// durationKey is the nonZero key of the request duration of method and tool
// label tool, without protocol version or network, of a success.
func durationKey(method, tool string) string { return failedDurationKey(method, tool, "", "") }

// failedDurationKey is durationKey with an error type and a status code.
func failedDurationKey(method, tool, errType, status string) string {
	return `mcp_server_operation_duration_seconds_count{error_type="` + errType + `",gen_ai_tool_name="` + tool + `",mcp_method_name="` + method +
		`",mcp_protocol_version="",network_protocol_name="",network_transport="",rpc_response_status_code="` + status + `"}`
}

// finishedKey is the nonZero key of the finished count of method, tool
// label tool, outcome, error type and status code.
func finishedKey(method, tool, outcome, errType, status string) string {
	return `mcp_server_requests_finished_total{error_type="` + errType + `",gen_ai_tool_name="` + tool + `",mcp_method_name="` + method +
		`",outcome="` + outcome + `",rpc_response_status_code="` + status + `"}`
}

// hexTrace returns the trace id whose hex form is s (the zero id when s is
// not one).
func hexTrace(s string) trace.TraceID {
	id, _ := trace.TraceIDFromHex(s)
	return id
}

// TestDurationCarriesFailures: in both eras, a failed request's duration
// carries its error type and status code as the semantic conventions'
// error.type and rpc.response.status_code say (a server error both, a
// tool's error its error type, a caller's fault its status code alone),
// beside the successes' series, whose labels have both empty; like them,
// they appear at first use (the exact counts at zero are the finished
// count's).
func TestDurationCarriesFailures(t *testing.T) {
	t.Parallel()
	m := metrics.New(vocabulary(), metrics.WithToolNames("t"))
	m.Precreate(mcpconv.TransportStreamableHTTP, []string{"tools/call", "ping"}, nil)
	require.Zero(t, testutil.CollectAndCount(m, mcpconv.MetricOperationDuration), "durations appear at first use")
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		for _, e := range []metrics.RequestEnd{
			{Tool: "t", Outcome: mcpconv.OutcomeOK},
			{Tool: "t", Outcome: mcpconv.OutcomeError, ErrorType: "-32603", StatusCode: "-32603"},
			{Tool: "t", Outcome: mcpconv.OutcomeOK, ErrorType: mcpconv.ErrorTypeTool},
			{Tool: "t", Outcome: mcpconv.OutcomeError, StatusCode: "-32602"},
		} {
			e.Method, e.ProtocolVersion, e.Transport = "tools/call", era, mcpconv.TransportStreamableHTTP
			m.RequestStarted(e.Method)
			m.RequestFinished(e)
		}
	}
	got := nonZero(t, m)
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		for _, labels := range [][2]string{{"", ""}, {"-32603", "-32603"}, {mcpconv.ErrorTypeTool, ""}, {"", "-32602"}} {
			key := `mcp_server_operation_duration_seconds_count{error_type="` + labels[0] + `",gen_ai_tool_name="t",mcp_method_name="tools/call",mcp_protocol_version="` + era +
				`",network_protocol_name="http",network_transport="tcp",rpc_response_status_code="` + labels[1] + `"}`
			assert.InDelta(t, 1, got[key], 0, key)
		}
	}
}
