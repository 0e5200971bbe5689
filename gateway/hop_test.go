package gateway_test

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// traced is a server traced into an in-memory exporter and counted into
// a registry, with the trace context read from and written to _meta.
type traced struct {
	srv   *server.Server
	spans *tracetest.InMemoryExporter
	reg   *prometheus.Registry
}

func newTraced(t *testing.T, spans *tracetest.InMemoryExporter, mc telemetry.MetricsConfig) *traced {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	reg := prometheus.NewRegistry()
	inst, err := middleware.NewInstrumentation(middleware.WithTracerProvider(tp), middleware.WithRegisterer(reg),
		middleware.WithPropagators(propagation.TraceContext{}), middleware.WithMetricsConfig(mc))
	require.NoError(t, err)
	srv := server.New(inst.ServerOptions()...)
	t.Cleanup(func() { _ = srv.Close() })
	return &traced{srv: srv, spans: spans, reg: reg}
}

// mount mounts ups on the server, counting the gateway into its registry.
func (tr *traced) mount(t *testing.T, ups ...gateway.Upstream) *gateway.Gateway {
	t.Helper()
	g, err := gateway.Mount(t.Context(), tr.srv, gateway.Config{Upstreams: ups, Registerer: tr.reg})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// span returns the one ended span named name of kind.
func (tr *traced) span(t *testing.T, name string, kind trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range tr.spans.GetSpans() {
		if s.Name == name && s.SpanKind == kind {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "%s spans of kind %s", name, kind)
	return found[0]
}

func attr(s tracetest.SpanStub, key attribute.Key) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.String()
		}
	}
	return ""
}

// TestHopSpansAndMetrics: each call forwarded is spanned once, by the
// downstream server span, which names the upstream and whose context is
// what the upstream gets; a call whose upstream dies is recorded
// upstream_closed, downstream (span, cancellation) and upstream (calls);
// the restart is counted, and the live session.
func TestHopSpansAndMetrics(t *testing.T) {
	testkit.Watchdog(t)
	tr := newTraced(t, tracetest.NewInMemoryExporter(), telemetry.MetricsConfig{Upstreams: []string{"e"}})
	tr.mount(t, gateway.Upstream{Name: "e", Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{upstreamEnv + "=1"}})
	c := mcptest.Connect(t, tr.srv)
	require.NotEmpty(t, c.CallTool("pid", nil).Text())
	require.True(t, c.CallTool("fail", nil).IsError)
	_, rpcErr := c.Call("tools/call", map[string]any{"name": "die"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, "upstream e is gone", rpcErr.Message)
	require.NotEmpty(t, c.CallTool("pid", nil).Text())
	// A span ends as its outcome is sealed, just after the answer was
	// written: the server's shutdown waits for every session to end, so for
	// every span (reading them now raced the last one's end). It ends c's
	// upstream session too: the gauge of sessions is read before.
	const sessions = "mcp_gateway_upstream_sessions{upstream=e}"
	live := gathered(t, tr.reg)[sessions]
	require.NoError(t, tr.srv.Shutdown(t.Context()))

	// The spans of the first call: the downstream server span stands for
	// the hop too (its context is what the upstream gets); the gateway
	// makes no client span of its own.
	var srvPid []tracetest.SpanStub
	for _, s := range tr.spans.GetSpans() {
		if s.Name == "tools/call pid" && s.SpanKind == trace.SpanKindServer {
			srvPid = append(srvPid, s)
		}
		assert.NotEqual(t, trace.SpanKindClient, s.SpanKind, "no span of the hop's own: %s", s.Name)
	}
	require.Len(t, srvPid, 2)

	// With one upstream, whose tools keep their names, the server span
	// names the upstream all the same.
	assert.Equal(t, "e", attr(srvPid[0], "vigil.upstream"))
	// A tool result with isError: tool_error on both spans.
	srvFail := tr.span(t, "tools/call fail", trace.SpanKindServer)
	assert.Equal(t, "e", attr(srvFail, "vigil.upstream"))
	assert.Equal(t, "tool_error", attr(srvFail, "error.type"))

	// The call whose upstream died: upstream_closed on both spans.
	srvDie := tr.span(t, "tools/call die", trace.SpanKindServer)
	assert.Equal(t, "upstream_closed", attr(srvDie, "error.type"))
	assert.Equal(t, "upstream_closed", attr(srvDie, "vigil.cancel.cause"))
	assert.Equal(t, "-32603", attr(srvDie, "rpc.response.status_code"))

	got := gathered(t, tr.reg)
	got[sessions] = live
	want := map[string]float64{
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=pid,mcp_method_name=tools/call,outcome=ok,upstream=e}":                      2,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=die,mcp_method_name=tools/call,outcome=upstream_closed,upstream=e}":         1,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=pid,mcp_method_name=tools/call,outcome=error,upstream=e}":                   0,
		"mcp_client_operation_duration_seconds{error_type=upstream_closed,gen_ai_tool_name=die,mcp_method_name=tools/call,upstream=e}": 1,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=fail,mcp_method_name=tools/call,outcome=tool_error,upstream=e}":             1,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=fail,mcp_method_name=tools/call,outcome=ok,upstream=e}":                     0,
		"mcp_client_operation_duration_seconds{error_type=tool_error,gen_ai_tool_name=fail,mcp_method_name=tools/call,upstream=e}":     1,
		"mcp_gateway_upstream_starts_total{result=ok,upstream=e}":                                                                      3, // the listing session, c's, c's again
		"mcp_gateway_upstream_sessions{upstream=e}":                                                                                    2, // the listing session and c's
		"mcp_gateway_upstream_dropped_total{reason=oversize_frame,upstream=e}":                                                         0,
		"mcp_server_cancellations_total{cause=upstream_closed,mcp_method_name=tools/call}":                                             1,
	}
	assert.Equal(t, want, pick(got, want))
	assert.Equal(t, map[string]float64{"pid": 2, "fail": 1, "die": 1}, servedFrom(got, "e"), "the serving durations of each tool labeled with its upstream")
}

// servedFrom returns the serving duration count of each tool got labels
// with upstream.
func servedFrom(got map[string]float64, upstream string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range got {
		if !strings.HasPrefix(k, "mcp_server_operation_duration_seconds{") || !strings.Contains(k, ",upstream="+upstream+"}") || v == 0 {
			continue
		}
		i := strings.Index(k, "gen_ai_tool_name=") + len("gen_ai_tool_name=")
		out[k[i:i+strings.IndexByte(k[i:], ',')]] += v
	}
	return out
}

// pick returns the series of got that want names; a series got lacks is
// left out, so that it shows as missing.
func pick(got, want map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k := range want {
		if v, ok := got[k]; ok {
			out[k] = v
		}
	}
	return out
}

// gathered returns every series of reg, as name{label=value,...} -> its
// value (a histogram's count); a label with an empty value is left out,
// as Prometheus stores it.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				if lp.GetValue() != "" {
					labels = append(labels, lp.GetName()+"="+lp.GetValue())
				}
			}
			key := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				got[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				got[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				got[key] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return got
}

// TestTraceContextBack: a sampling request of a traced upstream carries
// its span's context in _meta; the gateway's relay of it is a child of
// that span, linked to the downstream request's span (the hop's).
func TestTraceContextBack(t *testing.T) {
	testkit.Watchdog(t)
	spans := tracetest.NewInMemoryExporter()
	up := newTraced(t, spans, telemetry.MetricsConfig{}) // the upstream, traced into the same exporter
	require.NoError(t, up.srv.AddTool(server.Tool{Name: "sample"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		res, err := server.CreateMessage(ctx, &server.CreateMessageParams{
			Messages:  []server.SamplingMessage{{Role: server.RoleUser, Content: []server.Content{&server.TextContent{Text: "q"}}}},
			MaxTokens: 10,
		})
		if err != nil {
			return nil, err
		}
		return server.Text("sampled by " + res.Model), nil
	}))
	h := streamable.New(up.srv, streamable.WithResponseMode(streamable.ResponseSSE))
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = h.Close(); ts.Close() })

	front := newTraced(t, spans, telemetry.MetricsConfig{})
	front.mount(t, gateway.Upstream{Name: "a", URL: ts.URL})
	c := mcptest.Connect(t, front.srv, mcptest.WithCapabilities(map[string]any{"sampling": map[string]any{}}),
		mcptest.WithRequestHandler(func(context.Context, *transport.Request) (any, error) {
			return map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": "a"}, "model": "m"}, nil
		}))
	assert.Equal(t, "sampled by m", c.CallTool("sample", nil).Text())
	// Each server's span ends as its outcome is sealed, after its answer
	// was written: a shutdown waits for every outcome.
	require.NoError(t, front.srv.Shutdown(t.Context()))
	require.NoError(t, up.srv.Shutdown(t.Context()))

	var hop tracetest.SpanStub // the downstream request's server span, standing for the hop: the root
	for _, s := range spans.GetSpans() {
		if s.Name == "tools/call sample" && s.SpanKind == trace.SpanKindServer && !s.Parent.IsValid() {
			hop = s
		}
	}
	assert.Equal(t, "a", attr(hop, "vigil.upstream"))
	upSrv := childOf(t, spans, hop, "tools/call sample", trace.SpanKindServer)
	upAsk := childOf(t, spans, upSrv, "sampling/createMessage", trace.SpanKindClient)
	relay := childOf(t, spans, upAsk, "sampling/createMessage", trace.SpanKindServer)
	require.Len(t, relay.Links, 1)
	assert.Equal(t, hop.SpanContext.SpanID(), relay.Links[0].SpanContext.SpanID(), "linked to the hop")
	childOf(t, spans, relay, "sampling/createMessage", trace.SpanKindClient) // the ask of the downstream client
}

// childOf returns the one span named name of kind whose parent is parent.
func childOf(t *testing.T, spans *tracetest.InMemoryExporter, parent tracetest.SpanStub, name string, kind trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans.GetSpans() {
		if s.Name == name && s.SpanKind == kind && s.Parent.SpanID() == parent.SpanContext.SpanID() {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "%s %s spans, children of %s", kind, name, parent.Name)
	return found[0]
}

// TestServingTelemetryNamesTheUpstream: with several upstreams, each
// forwarded call's server span and serving duration name the upstream its
// tool is forwarded to, and the gateway's series its tool.
func TestServingTelemetryNamesTheUpstream(t *testing.T) {
	testkit.Watchdog(t)
	tr := newTraced(t, tracetest.NewInMemoryExporter(), telemetry.MetricsConfig{Upstreams: []string{"e", "f"}})
	fixture := func(name string) gateway.Upstream {
		return gateway.Upstream{Name: name, Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{upstreamEnv + "=1"}}
	}
	g := tr.mount(t, fixture("e"), fixture("f"))
	c := mcptest.Connect(t, tr.srv)
	var names []string
	for _, tool := range c.ListTools() {
		names = append(names, tool.Name)
	}
	require.Contains(t, names, "e_pid")
	require.Contains(t, names, "f_pid")
	require.NotEmpty(t, c.CallTool("e_pid", nil).Text())
	require.NotEmpty(t, c.CallTool("f_pid", nil).Text())
	require.NotEmpty(t, c.CallTool("f_pid", nil).Text())
	require.True(t, c.CallTool("f_fail", nil).IsError)
	// Each upstream's own view (the live page's): its calls by outcome.
	ups := g.Upstreams()
	require.Len(t, ups, 2)
	assert.Equal(t, map[string]int64{"ok": 1}, ups[0].Calls)
	assert.Equal(t, map[string]int64{"ok": 2, "tool_error": 1}, ups[1].Calls)
	assert.Positive(t, ups[1].MeanLatency)
	assert.Positive(t, ups[1].Starts)
	require.NoError(t, tr.srv.Shutdown(t.Context())) // every outcome recorded, every span ended
	got := gathered(t, tr.reg)

	for _, s := range tr.spans.GetSpans() {
		if s.SpanKind == trace.SpanKindServer && strings.HasPrefix(s.Name, "tools/call ") {
			assert.Equal(t, strings.TrimPrefix(s.Name, "tools/call ")[:1], attr(s, "vigil.upstream"), s.Name)
		}
	}
	assert.Equal(t, map[string]float64{"e_pid": 1}, servedFrom(got, "e"))
	assert.Equal(t, map[string]float64{"f_pid": 2, "f_fail": 1}, servedFrom(got, "f"))
	want := map[string]float64{
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=pid,mcp_method_name=tools/call,outcome=ok,upstream=e}":          1,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=pid,mcp_method_name=tools/call,outcome=ok,upstream=f}":          2,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=fail,mcp_method_name=tools/call,outcome=tool_error,upstream=f}": 1,
		"mcp_gateway_upstream_calls_total{gen_ai_tool_name=fail,mcp_method_name=tools/call,outcome=tool_error,upstream=e}": 0,
	}
	assert.Equal(t, want, pick(got, want))
}
