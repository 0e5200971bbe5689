package otelsetup_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/internal/otelsetup"
	"github.com/vigil-mcp/vigil/telemetry"
)

// metricsEnv is every variable the metrics tests touch.
var metricsEnv = []string{
	"OTEL_SDK_DISABLED", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_METRIC_EXPORT_INTERVAL",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
}

func setMetricsEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range metricsEnv {
		t.Setenv(k, env[k])
	}
}

// recordLoad records, in a registry's metrics.Metrics: 3 ok echo calls
// (traced), a tool error, a client cancel.
func recordLoad(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := metrics.New(vocabulary())
	m.Precreate(telemetry.TransportStdio, []string{"initialize", "tools/call"}, []string{"echo"})
	require.NoError(t, reg.Register(m))
	require.NoError(t, reg.Register(collectors.NewGoCollector()))
	end := func(e metrics.RequestEnd) {
		m.RequestStarted(e.Method)
		m.RequestFinished(e)
	}
	for range 3 {
		end(metrics.RequestEnd{
			Method: "tools/call", Tool: "echo", ToolRegistered: true, Outcome: mcpconv.OutcomeOK,
			Duration: 15 * time.Millisecond, TraceID: trace.TraceID{1, 2, 3},
		})
	}
	end(metrics.RequestEnd{
		Method: "tools/call", Tool: "echo", ToolRegistered: true, Outcome: mcpconv.OutcomeOK,
		ErrorType: mcpconv.ErrorTypeTool, Duration: time.Millisecond,
	})
	m.RequestStarted("tools/call")
	m.RequestCancelled("tools/call", "client_cancel")
	m.ResponseDropped("tools/call", "cancelled")
	m.RequestFinished(metrics.RequestEnd{
		Method: "tools/call", Tool: "sleep", ToolRegistered: true,
		Outcome: mcpconv.OutcomeCancelled, ErrorType: mcpconv.ErrorTypeCancelled, Duration: time.Second,
	})
	m.SessionStarted(telemetry.TransportStreamableHTTP)
	return reg
}

func TestMetricProducer(t *testing.T) {
	sms, err := otelsetup.MetricProducer(recordLoad(t)).Produce(t.Context())
	require.NoError(t, err)
	require.Len(t, sms, 1)
	assert.Equal(t, mcpconv.ScopeName, sms[0].Scope.Name)
	byName := map[string]metricdata.Metrics{}
	for _, m := range sms[0].Metrics {
		byName[m.Name] = m
	}
	var want []string
	for _, inst := range mcpconv.OTelInstruments() {
		if inst.Name != "mcp.server.log_lines.dropped" && inst.Name != "mcp.server.streams.cut" && inst.Name != "mcp.server.audit_lines.dropped" { // not in this registry
			want = append(want, inst.Name)
		}
	}
	got := make([]string, 0, len(byName))
	for name := range byName {
		got = append(got, name)
	}
	assert.ElementsMatch(t, want, got, "every family of metrics.Metrics, renamed, and nothing of the Go collector")

	dur := byName["mcp.server.operation.duration"]
	assert.Equal(t, "s", dur.Unit)
	h, ok := dur.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%T", dur.Data)
	assert.Equal(t, metricdata.CumulativeTemporality, h.Temporality)
	set := func(kvs ...attribute.KeyValue) attribute.Distinct {
		s := attribute.NewSet(kvs...)
		return s.Equivalent()
	}
	method := attribute.String("mcp.method.name", "tools/call")
	echo, sleep := attribute.String("gen_ai.tool.name", "echo"), attribute.String("gen_ai.tool.name", "sleep")
	counts := map[attribute.Distinct]uint64{}
	for _, dp := range h.DataPoints {
		counts[dp.Attributes.Equivalent()] = dp.Count
		if dp.Attributes.Equivalent() == set(method, echo) {
			assert.Equal(t, telemetry.DurationBuckets(), dp.Bounds)
			require.NotEmpty(t, dp.Exemplars, "the traced calls' exemplar")
			assert.Equal(t, trace.TraceID{1, 2, 3}, trace.TraceID(dp.Exemplars[0].TraceID), "exemplar trace id as 16 bytes")
		}
	}
	assert.Equal(t, uint64(3), counts[set(method, echo)], "echo's ok calls: no error.type")
	assert.Equal(t, uint64(1), counts[set(method, echo, attribute.String("error.type", "tool_error"))], "echo's tool error: its error.type (semconv)")
	assert.Equal(t, uint64(1), counts[set(method, sleep, attribute.String("error.type", "cancelled"))], "the cancelled call")

	sum := func(name string, kvs ...attribute.KeyValue) float64 {
		t.Helper()
		s, ok := byName[name].Data.(metricdata.Sum[float64])
		require.True(t, ok, "%s: %T", name, byName[name].Data)
		for _, dp := range s.DataPoints {
			if dp.Attributes.Equivalent() == set(kvs...) {
				return dp.Value
			}
		}
		t.Fatalf("%s: no point %v", name, kvs)
		return 0
	}
	assert.InDelta(t, 1, sum("mcp.server.cancellations", method, attribute.String("cause", "client_cancel")), 0)
	assert.InDelta(t, 1, sum("mcp.server.late_responses.dropped", method, attribute.String("reason", "cancelled")), 0)
	succeeded := attribute.String("outcome", "ok")
	assert.InDelta(t, 3, sum("mcp.server.requests.finished", method, echo, succeeded), 0, "ok echo: no error.type")
	assert.InDelta(t, 1, sum("mcp.server.requests.finished", method, echo, succeeded, attribute.String("error.type", "tool_error")), 0)
	assert.InDelta(t, 1, sum("mcp.server.requests.finished", method, sleep, attribute.String("outcome", "cancelled"), attribute.String("error.type", "cancelled")), 0)
	assert.InDelta(t, 0, sum("mcp.server.messages.rejected", attribute.String("reason", "parse_error")), 0)
	assert.Equal(t, "{cancellation}", byName["mcp.server.cancellations"].Unit)
	assert.True(t, byName["mcp.server.cancellations"].Data.(metricdata.Sum[float64]).IsMonotonic)

	active := byName["mcp.server.sessions.active"].Data.(metricdata.Sum[float64])
	assert.False(t, active.IsMonotonic, "sessions active is an UpDownCounter")
	assert.InDelta(t, 1, sum("mcp.server.sessions.active", attribute.String("transport", "streamable_http")), 0)
	assert.Equal(t, "By", byName["mcp.server.received_bytes"].Unit)
}

func TestExportMetricsEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		noop    bool
		grpc    bool // given WithGRPC
		wantErr string
	}{
		{name: "unset", noop: true},
		{name: "none", env: map[string]string{"OTEL_METRICS_EXPORTER": "none"}, noop: true},
		{name: "disabled", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, noop: true},
		{name: "otlp", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}},
		{name: "otlp grpc", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"}, grpc: true},
		{name: "otlp grpc not linked", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "grpc"}, wantErr: "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL=grpc: this program does not link OTLP over gRPC"},
		{name: "console", env: map[string]string{"OTEL_METRICS_EXPORTER": "console"}},
		{name: "prometheus", env: map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"}, wantErr: `OTEL_METRICS_EXPORTER="prometheus" is not supported`},
		{name: "bad protocol", env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: `OTLP protocol "http/json"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setMetricsEnv(t, tc.env)
			var grpc otelsetup.Option
			if tc.grpc {
				grpc = otelsetup.WithGRPC(grpcExporters)
			}
			shutdown, exporting, err := otelsetup.ExportMetrics(t.Context(), grpc, otelsetup.WithConsoleWriter(io.Discard))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, !tc.noop, exporting)
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			_ = shutdown(ctx) // nothing listens on the default endpoint
		})
	}
}

// TestExportMetricsFlushesOnShutdown: with an export interval of an hour,
// the metrics still reach the OTLP endpoint, at shutdown, renamed, with the
// resource.
func TestExportMetricsFlushesOnShutdown(t *testing.T) {
	var (
		mu   sync.Mutex
		reqs []*colmetricpb.ExportMetricsServiceRequest
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err == nil && r.URL.Path == "/v1/metrics" && proto.Unmarshal(body, req) == nil {
			mu.Lock()
			reqs = append(reqs, req)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	setMetricsEnv(t, map[string]string{
		"OTEL_METRICS_EXPORTER":       "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL,
		"OTEL_METRIC_EXPORT_INTERVAL": "3600000",
	})
	shutdown, _, err := otelsetup.ExportMetrics(t.Context(),
		otelsetup.WithService("vigil-test", "v0"),
		otelsetup.WithMetricProducer(otelsetup.MetricProducer(recordLoad(t))))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, shutdown(ctx))

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, reqs, 1, "one export, at shutdown")
	rm := reqs[0].GetResourceMetrics()
	require.Len(t, rm, 1)
	var service string
	for _, kv := range rm[0].GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			service = kv.GetValue().GetStringValue()
		}
	}
	assert.Equal(t, "vigil-test", service)
	var hist *metricpb.Metric
	for _, sm := range rm[0].GetScopeMetrics() {
		for _, m := range sm.GetMetrics() {
			if m.GetName() == "mcp.server.operation.duration" {
				hist = m
			}
		}
	}
	require.NotNil(t, hist, "mcp.server.operation.duration exported")
	assert.Equal(t, "s", hist.GetUnit())
	var n uint64
	for _, dp := range hist.GetHistogram().GetDataPoints() {
		n += dp.GetCount()
		for _, e := range dp.GetExemplars() {
			assert.Len(t, e.GetTraceId(), 16)
			assert.True(t, bytes.HasPrefix(e.GetTraceId(), []byte{1, 2, 3}))
		}
	}
	assert.Equal(t, uint64(5), n, "every call's duration")
}

// BenchmarkMetricProducer: what one OTLP export costs to read
// (Gather, the bridge's conversion and the renaming) for a metrics.Metrics
// with its series created at zero and a few tools (about 1 ms; a registry
// with the Go collector too adds about 2 ms, its runtime metrics are
// gathered and then skipped); recording a request costs nothing more.
func BenchmarkMetricProducer(b *testing.B) {
	reg := prometheus.NewRegistry()
	m := metrics.New(vocabulary(), metrics.WithToolNames("echo", "sleep", "countdown", "convert_temperature", "confirm_action"))
	reg.MustRegister(m)
	m.RequestStarted("tools/call")
	m.RequestFinished(metrics.RequestEnd{Method: "tools/call", Tool: "echo", Outcome: mcpconv.OutcomeOK, Duration: time.Millisecond, TraceID: trace.TraceID{1}})
	p := otelsetup.MetricProducer(reg)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Produce(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestRecordedWhileExporting: telemetry's
// BenchmarkRequestRecorded while an OTLP export reads the same collectors
// every 10 ms (fifty times the end-to-end test's interval, 6,000 times
// the default): what the pushes cost the hot path, through contention and
// CPU, when on. Compare with BenchmarkRequestRecorded (pushes off); its
// B/op are the exports' allocations spread over the requests.
func BenchmarkRequestRecordedWhileExporting(b *testing.B) {
	reg := prometheus.NewRegistry()
	m := metrics.New(vocabulary())
	reg.MustRegister(m)
	p := otelsetup.MetricProducer(reg)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_, _ = p.Produce(context.Background())
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	tid := trace.TraceID{1, 2, 3}
	b.ReportAllocs()
	for b.Loop() {
		m.RequestStarted("tools/call")
		m.RequestFinished(metrics.RequestEnd{
			Method: "tools/call", Tool: "echo", ToolRegistered: true,
			Outcome: mcpconv.OutcomeOK, Duration: time.Millisecond, TraceID: tid,
		})
	}
}
