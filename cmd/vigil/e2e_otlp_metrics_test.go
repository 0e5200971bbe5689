package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/telemetry"
)

// The load of the OTLP metrics test.
const (
	otlpEchoes     = 7 // echo: answered with a result
	otlpToolErrors = 2 // echo without its text: refused by its schema, a result with isError (error_type invalid_arguments)
	otlpCancelled  = 1 // sleep cancelled with notifications/cancelled
)

// TestE2EOTLPMetrics runs vigil with OTEL_METRICS_EXPORTER=otlp, pushing
// its metrics every 500 ms over OTLP/HTTP to a real Jaeger v2 (an
// OpenTelemetry Collector distribution) whose metrics pipeline ends in the
// Collector's Prometheus exporter, which a real Prometheus scrapes. After a
// known load (ok calls, tool errors, a client cancel, the session deleted)
// it checks through Prometheus's HTTP API that what arrived is what the
// client's ground truth says: the semantic-convention histogram
// mcp.server.operation.duration (rendered mcp_server_operation_duration_seconds,
// with mcp_method_name and gen_ai_tool_name whatever the outcome, the semconv
// buckets and the clients' trace ids as exemplars), mcp.server.session.duration,
// the finished count by tool and error_type, and the outcome, cause, drop
// and reject counters; and that every family
// of /metrics arrives under its Prometheus name with its type, so that one
// dashboard serves both paths. The Collector also forwards the metrics over
// OTLP to the test, which checks the names, units and attribute keys they
// travel under: those of the semantic conventions.
func TestE2EOTLPMetrics(t *testing.T) {
	tools := requireE2ETools(t)
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	api := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer api.CloseIdleConnections()
	mcp := &http.Client{Transport: &http.Transport{}}
	defer mcp.CloseIdleConnections()

	sink := newOTLPSink(t)
	jaeger := startJaegerWithMetrics(t, tools.jaeger, api, sink.url)
	t.Logf("jaeger ready after %v (OTLP %s, Prometheus exporter %s)", time.Since(start).Round(time.Millisecond), jaeger.otlpHTTP, jaeger.metrics)

	vigil, mcpURL := startVigilE2EEnv(ctx, t, jaeger.otlpHTTP, []string{
		"OTEL_METRICS_EXPORTER=otlp",
		"OTEL_METRIC_EXPORT_INTERVAL=500", // ms
	})
	u, err := url.Parse(mcpURL)
	require.NoError(t, err)
	metricsURL := "http://" + u.Host + "/metrics"

	prom := startPrometheus(t, tools.prometheus, jaeger.metrics, api)
	t.Logf("prometheus scraping the collector after %v", time.Since(start).Round(time.Millisecond))

	truth := &groundTruth{}
	s, err := openSession(ctx, mcpURL, mcp, truth)
	require.NoError(t, err)
	for i := range otlpEchoes {
		text := fmt.Sprintf("otlp %d", i)
		_, _, _, err := s.call(ctx, "echo", "echo", map[string]any{"text": text}, echoText(text))
		require.NoError(t, err)
	}
	for range otlpToolErrors {
		_, _, _, err := s.call(ctx, "echo", "echo", map[string]any{}, isToolError)
		require.NoError(t, err)
	}
	calls := make([]*interruptedCall, otlpCancelled)
	for i := range calls {
		calls[i] = &interruptedCall{s: s, how: interruptCancel}
	}
	require.NoError(t, interruptCalls(ctx, metricsURL, api, calls))
	require.NoError(t, s.c.deleteSession(ctx))
	t.Logf("load: started %v, outcomes %v, causes %v, drops %v", truth.started, truth.outcomes, truth.causes, truth.drops)

	waitScraped(ctx, t, prom, truth)
	t.Logf("final counts scraped through the collector %v after start", time.Since(start).Round(time.Millisecond))
	assertMetricTypes(ctx, t, prom)
	assertGroundTruth(ctx, t, prom, truth)
	assertOTLPHistogram(ctx, t, prom)
	assertExemplars(ctx, t, prom, truth, start)
	sink.waitNext(t, 10*time.Second) // an export after the final counts
	assertOTLPNames(t, sink)

	require.NoError(t, vigil.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// assertOTLPHistogram checks the duration histogram of tools/call by
// gen_ai_tool_name, whatever the outcome, and the finished count by
// gen_ai_tool_name and error_type (absent on success: the Collector renders
// an absent attribute as no label), and the duration's buckets: the
// semconv boundaries of telemetry.DurationBuckets, and +Inf.
func assertOTLPHistogram(ctx context.Context, t *testing.T, prom *prometheusPeer) {
	t.Helper()
	byLabels := func(query string, labels ...string) map[string]float64 {
		t.Helper()
		res, err := prom.query(ctx, query)
		require.NoError(t, err)
		got := map[string]float64{}
		for _, s := range res {
			v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
			require.NoError(t, err)
			var key []string
			for _, l := range labels {
				key = append(key, s.Metric[l])
			}
			got[strings.Join(key, "/")] = v
		}
		return got
	}
	assert.Equal(t, map[string]float64{"echo": otlpEchoes + otlpToolErrors, "sleep": otlpCancelled},
		byLabels(`sum by (`+mcpconv.LabelTool+`) (`+mcpconv.MetricOperationDuration+`_count{`+mcpconv.LabelMethod+`="tools/call"}) > 0`, mcpconv.LabelTool),
		"tools/call durations by gen_ai_tool_name, whatever the outcome")
	assert.Equal(t, map[string]float64{
		"echo/": otlpEchoes,
		"echo/" + mcpconv.ErrorTypeInvalidArguments: otlpToolErrors,
		"sleep/" + mcpconv.ErrorTypeCancelled:       otlpCancelled,
	}, byLabels(`sum by (`+mcpconv.LabelTool+`, `+mcpconv.LabelErrorType+`) (`+mcpconv.MetricRequestsFinished+`{`+mcpconv.LabelMethod+`="tools/call"}) > 0`,
		mcpconv.LabelTool, mcpconv.LabelErrorType), "tools/call finished by gen_ai_tool_name and error_type")

	// Summed by le: the echo series precreated at zero sits beside the one
	// the calls were counted in.
	res, err := prom.query(ctx, `sum by (le) (`+mcpconv.MetricOperationDuration+`_bucket{`+mcpconv.LabelMethod+`="tools/call",`+
		mcpconv.LabelTool+`="echo"})`)
	require.NoError(t, err)
	bounds := map[float64]float64{} // by le ("1" or "1.0", as the exposition format writes it)
	for _, s := range res {
		v, err := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		require.NoError(t, err)
		le, err := strconv.ParseFloat(s.Metric["le"], 64)
		require.NoError(t, err)
		bounds[le] = v
	}
	require.Len(t, bounds, len(telemetry.DurationBuckets())+1, "buckets of the echo series: %v", bounds)
	for _, b := range telemetry.DurationBuckets() {
		assert.Contains(t, bounds, b, "bucket le=%v", b)
	}
	assert.InDelta(t, otlpEchoes+otlpToolErrors, bounds[math.Inf(1)], 0, "the +Inf bucket counts every echo, refused ones too")
	assert.InDelta(t, otlpEchoes+otlpToolErrors, bounds[1], 0, "every echo took less than a second")

	sum, err := prom.scalar(ctx, `sum(`+mcpconv.MetricOperationDuration+`_sum{`+mcpconv.LabelMethod+`="tools/call",`+mcpconv.LabelTool+`="sleep"})`)
	require.NoError(t, err)
	assert.Positive(t, sum, "the cancelled sleep's duration, in seconds")
	assert.Less(t, sum, 60.0, "the cancelled sleep's duration, in seconds")
}

// otlpSink is an OTLP/HTTP metrics endpoint that keeps the last export.
type otlpSink struct {
	url  string
	mu   sync.Mutex
	last *colmetricpb.ExportMetricsServiceRequest
	n    int
}

func newOTLPSink(t *testing.T) *otlpSink {
	t.Helper()
	s := &otlpSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := &colmetricpb.ExportMetricsServiceRequest{}
		if err != nil || r.URL.Path != "/v1/metrics" || proto.Unmarshal(body, req) != nil {
			http.Error(w, "not an OTLP metrics export", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.last, s.n = req, s.n+1
		s.mu.Unlock()
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// waitNext waits, up to timeout, for one more export than it has seen.
func (s *otlpSink) waitNext(t *testing.T, timeout time.Duration) {
	t.Helper()
	s.mu.Lock()
	seen := s.n
	s.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		n := s.n
		s.mu.Unlock()
		if n > seen {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no OTLP export reached the sink through the collector in %v (after %d)", timeout, seen)
}

// metrics returns the metrics of the last export by name, with the scope
// they came in.
func (s *otlpSink) metrics() (map[string]*metricpb.Metric, map[string]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byName, scopes := map[string]*metricpb.Metric{}, map[string]string{}
	for _, rm := range s.last.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				byName[m.GetName()] = m
				scopes[m.GetName()] = sm.GetScope().GetName()
			}
		}
	}
	return byName, scopes, s.n
}

// pointAttrs returns a data point's attributes as strings.
func pointAttrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	return m
}

// assertOTLPNames checks the last export the Collector forwarded (by then
// the counts are final: the exports are cumulative, and Prometheus has
// seen the final ones): every metric under its OpenTelemetry name and unit
// (mcpconv.OTelInstruments), in Vigil's scope; the duration histogram
// with the semconv attribute keys and no empty value, its bounds, and the
// counts of the load; the cause counter.
func assertOTLPNames(t *testing.T, sink *otlpSink) {
	t.Helper()
	byName, scopes, n := sink.metrics()
	t.Logf("%d OTLP exports forwarded by the collector; the last holds %d metrics", n, len(byName))
	for prom, inst := range mcpconv.OTelInstruments() {
		m, ok := byName[inst.Name]
		if !assert.True(t, ok, "%s exported as %s", prom, inst.Name) {
			continue
		}
		assert.Equal(t, inst.Unit, m.GetUnit(), "unit of %s", inst.Name)
		assert.Equal(t, mcpconv.ScopeName, scopes[inst.Name], "scope of %s", inst.Name)
	}
	assert.Len(t, byName, len(mcpconv.OTelInstruments()), "only the MCP metrics: %v", slices.Sorted(maps.Keys(byName)))

	dur := byName["mcp.server.operation.duration"]
	require.NotNil(t, dur)
	require.NotNil(t, dur.GetHistogram(), "mcp.server.operation.duration is a histogram")
	assert.Equal(t, metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, dur.GetHistogram().GetAggregationTemporality())
	counts := map[string]uint64{}
	for _, dp := range dur.GetHistogram().GetDataPoints() {
		a := pointAttrs(dp.GetAttributes())
		for k, v := range a {
			assert.Contains(t, []string{
				"mcp.method.name", "gen_ai.tool.name", "mcp.protocol.version", "network.transport", "network.protocol.name",
				"error.type", "rpc.response.status_code",
			}, k, "attribute key of %v", a)
			assert.NotEmpty(t, v, "attribute %s of %v", k, a)
		}
		assert.Equal(t, telemetry.DurationBuckets(), dp.GetExplicitBounds(), "bounds of %v", a)
		if a["mcp.method.name"] == "tools/call" && dp.GetCount() > 0 {
			counts[a["gen_ai.tool.name"]] += dp.GetCount()
			if a["gen_ai.tool.name"] == "sleep" {
				// The cancelled call ends with its cause on the duration, as semconv's error.type.
				assert.Equal(t, "cancelled", a["error.type"], "error.type of %v", a)
			}
			// The semconv protocol version and network of a Streamable HTTP call.
			assert.NotEmpty(t, a["mcp.protocol.version"], "mcp.protocol.version of %v", a)
			assert.Equal(t, "tcp", a["network.transport"], "network.transport of %v", a)
			assert.Equal(t, "http", a["network.protocol.name"], "network.protocol.name of %v", a)
		}
	}
	assert.Equal(t, map[string]uint64{"echo": otlpEchoes + otlpToolErrors, "sleep": otlpCancelled},
		counts, "tools/call durations by gen_ai.tool.name, whatever the outcome, over OTLP")
	ends := map[string]float64{}
	for _, dp := range byName["mcp.server.requests.finished"].GetSum().GetDataPoints() {
		a := pointAttrs(dp.GetAttributes())
		if a["mcp.method.name"] == "tools/call" && dp.GetAsDouble() > 0 {
			ends[a["gen_ai.tool.name"]+"/"+a["outcome"]+"/"+a["error.type"]] += dp.GetAsDouble()
		}
	}
	assert.Equal(t, map[string]float64{
		"echo/ok/": otlpEchoes,
		"echo/ok/" + mcpconv.ErrorTypeInvalidArguments:  otlpToolErrors,
		"sleep/cancelled/" + mcpconv.ErrorTypeCancelled: otlpCancelled,
	}, ends, "tools/call finished by gen_ai.tool.name, outcome and error.type, over OTLP")

	sessions := byName["mcp.server.session.duration"]
	require.NotNil(t, sessions.GetHistogram(), "mcp.server.session.duration is a histogram")
	var ended uint64
	for _, dp := range sessions.GetHistogram().GetDataPoints() {
		ended += dp.GetCount()
	}
	assert.Equal(t, uint64(1), ended, "ended sessions, over OTLP")

	causes := map[string]float64{}
	for _, dp := range byName["mcp.server.cancellations"].GetSum().GetDataPoints() {
		a := pointAttrs(dp.GetAttributes())
		if dp.GetAsDouble() > 0 {
			causes[a["mcp.method.name"]+" "+a[mcpconv.LabelCause]] = dp.GetAsDouble()
		}
	}
	assert.Equal(t, map[string]float64{"tools/call client_cancel": otlpCancelled}, causes, "cancellations by cause, over OTLP")
	assert.True(t, byName["mcp.server.cancellations"].GetSum().GetIsMonotonic())
	assert.False(t, byName["mcp.server.requests.in_flight"].GetSum().GetIsMonotonic(), "in flight is an UpDownCounter")
}
