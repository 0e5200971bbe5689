package debugpage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// A server of one's own gets the whole live page: the Recorder's hooks go
// into the instrumentation, its trace ring takes the spans, and the page
// is mounted on an admin mux beside the metrics. Here a tool call goes
// through an in-memory session, and the page's JSON shows its count and
// its kept trace.
func Example() {
	rec := debugpage.NewRecorder()
	// Each span reaches the ring as it ends.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(rec.SpanExporter()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	registry := prometheus.NewRegistry()
	inst, err := middleware.NewInstrumentation(
		middleware.WithTracerProvider(tp),
		middleware.WithRegisterer(registry),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := server.New(append(inst.ServerOptions(), rec.ServerOption())...)
	_ = srv.AddTool(server.Tool{Name: "greet"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	})

	admin := http.NewServeMux()
	page := http.StripPrefix("/debug/vigil", debugpage.Handler(srv, rec, debugpage.WithMetricsLink("/metrics")))
	admin.Handle("/debug/vigil", page)
	admin.Handle("/debug/vigil/", page)
	// admin.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))

	client, conn := memory.NewPair()
	served := make(chan error, 1)
	go func() { served <- inst.ConnServer(srv, telemetry.TransportMemory).Serve(context.Background(), conn) }()
	for id, req := range []struct{ method, params string }{
		{"initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}`},
		{"tools/call", `{"name":"greet"}`},
	} {
		_ = client.Write(context.Background(), &transport.Request{ID: transport.Int64ID(int64(id + 1)), Method: req.method, Params: json.RawMessage(req.params)})
		_, _ = client.Read(context.Background())
	}
	_ = client.Close()
	if err := <-served; err != nil { // every request's outcome and span are recorded by now
		fmt.Println(err)
	}

	w := httptest.NewRecorder()
	admin.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/vigil?format=json", nil))
	var view struct {
		Stats []struct {
			Key   string `json:"key"`
			Total struct {
				Requests uint64 `json:"requests"`
			} `json:"since_start"`
		} `json:"stats"`
		TracesKept int `json:"traces_kept_count"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &view); err != nil {
		fmt.Println(err)
		return
	}
	for _, row := range view.Stats {
		fmt.Printf("%s: %d request(s)\n", row.Key, row.Total.Requests)
	}
	fmt.Println("kept traces:", view.TracesKept)
	// Output:
	// initialize: 1 request(s)
	// tools/call greet: 1 request(s)
	// kept traces: 2
}
