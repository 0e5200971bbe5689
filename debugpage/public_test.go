package debugpage_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/internal/receiving"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// pageJSON is what the test reads of the page's JSON.
type pageJSON struct {
	Stats []struct {
		Key   string `json:"key"`
		Total struct {
			Requests uint64 `json:"requests"`
			OK       uint64 `json:"ok"`
		} `json:"since_start"`
	} `json:"stats"`
	Sessions []struct {
		ID        string `json:"id"`
		Transport string `json:"transport"`
	} `json:"sessions"`
	Traces     []keptTraceJSON `json:"traces"`
	TracesKept bool            `json:"traces_kept"`
}

// keptTraceJSON is what the test reads of a kept trace in the page's JSON.
type keptTraceJSON struct {
	TraceID string `json:"trace_id"`
	Key     string `json:"key"`
	Outcome string `json:"outcome"`
}

// A server built from the public packages alone (server, middleware,
// otelsetup, streamable), with the page on an admin mux of its own beside
// /metrics: after a tools/call over Streamable HTTP, the page shows the
// tool, its request counts, the session and the call's kept trace, in
// HTML and JSON, and the trace's view serves it.
func TestPageOfAServerBuiltFromPublicPackages(t *testing.T) {
	rec := debugpage.NewRecorder()
	tp, shutdown := receiving.NewProvider(rec.SpanExporter().(receiving.SpanReceiver))
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	// A recorder of the test's own, called after the call's span ended:
	// the barrier after which the page has everything.
	called := make(chan struct{}, 1)
	registry := prometheus.NewRegistry()
	inst, err := middleware.NewInstrumentation(
		middleware.WithTracerProvider(tp),
		middleware.WithRegisterer(registry),
	)
	require.NoError(t, err)
	srv := server.New(append(inst.ServerOptions(), rec.ServerOption(), server.WithObserver(endObserver(func(req *server.Request) {
		if req.Method == "tools/call" {
			called <- struct{}{}
		}
	})))...)
	require.NoError(t, srv.AddTool(server.Tool{Name: "greet"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	}))

	endpoint := streamable.New(inst.ConnServer(srv, telemetry.TransportStreamableHTTP))
	mcp := httptest.NewServer(endpoint)
	t.Cleanup(mcp.Close)
	t.Cleanup(func() { _ = endpoint.Close() })
	admin := http.NewServeMux()
	page := http.StripPrefix("/debug/vigil", debugpage.Handler(srv, rec, debugpage.WithService("greeter", "test"), debugpage.WithMetricsLink("/metrics")))
	admin.Handle("/debug/vigil", page)
	admin.Handle("/debug/vigil/", page)
	admin.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	adminSrv := httptest.NewServer(admin)
	t.Cleanup(adminSrv.Close)

	client := mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: mcp.URL}))
	client.Initialize("", nil)
	res := client.CallTool("greet", nil)
	require.False(t, res.IsError)
	<-called

	get := func(path string) string {
		t.Helper()
		resp, err := adminSrv.Client().Get(adminSrv.URL + path)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s: %s", path, body)
		return string(body)
	}
	var view pageJSON
	require.NoError(t, json.Unmarshal([]byte(get("/debug/vigil?format=json")), &view))
	counts := map[string][2]uint64{}
	for _, row := range view.Stats {
		counts[row.Key] = [2]uint64{row.Total.Requests, row.Total.OK}
	}
	assert.Equal(t, [2]uint64{1, 1}, counts["tools/call greet"], "requests, ok")
	assert.Equal(t, [2]uint64{1, 1}, counts["initialize"], "requests, ok")
	require.Len(t, view.Sessions, 1)
	assert.Equal(t, telemetry.TransportStreamableHTTP, view.Sessions[0].Transport)
	assert.True(t, view.TracesKept)
	i := slices.IndexFunc(view.Traces, func(tr keptTraceJSON) bool { return tr.Key == "tools/call greet" })
	require.GreaterOrEqual(t, i, 0, "the call's trace among %+v", view.Traces)
	trace := view.Traces[i]
	assert.Equal(t, "ok", trace.Outcome)

	for _, path := range []string{"/debug/vigil", "/debug/vigil/"} {
		html := get(path)
		assert.Contains(t, html, "<title>greeter test</title>")
		assert.Contains(t, html, "<h1>greeter test</h1>")
		assert.Contains(t, html, `<a href="/debug/vigil?key=tools%2Fcall&#43;greet">tools/call greet</a>`, path)
		assert.Contains(t, html, `href="/debug/vigil/trace/`+trace.TraceID+`"`, path)
		assert.Contains(t, html, `<link rel="stylesheet" href="/debug/vigil/style.css">`, path)
		assert.Contains(t, html, `<a href="/metrics">/metrics</a>`, path)
	}
	traceHTML := get("/debug/vigil/trace/" + trace.TraceID)
	assert.Contains(t, traceHTML, "<h1>tools/call greet</h1>")
	assert.Contains(t, traceHTML, `<a href="/debug/vigil">← greeter</a>`)
	var traceJSON struct {
		TraceID string `json:"trace_id"`
		Key     string `json:"key"`
		Spans   []struct {
			Name string `json:"name"`
		} `json:"spans"`
	}
	require.NoError(t, json.Unmarshal([]byte(get("/debug/vigil/trace/"+trace.TraceID+"?format=json")), &traceJSON))
	assert.Equal(t, trace.TraceID, traceJSON.TraceID)
	assert.Equal(t, "tools/call greet", traceJSON.Key)
	require.NotEmpty(t, traceJSON.Spans)
	assert.Equal(t, "tools/call greet", traceJSON.Spans[0].Name)
	assert.True(t, strings.HasPrefix(get("/debug/vigil/style.css"), "body {"))
	assert.Contains(t, get("/metrics"), "mcp_server_requests_started_total")
}

// endObserver returns a server.Observer that calls f with each request
// that ended, after the Observers given before it were told.
func endObserver(f func(req *server.Request)) server.Observer {
	return server.Observer{RequestEnded: func(_ context.Context, req *server.Request, _ server.Outcome) { f(req) }}
}
