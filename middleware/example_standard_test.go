package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// Example_standard wires a server with every middleware of the package in
// the documented order: Tracing, Metrics, Logging, Recover, Timeout and a
// per-tool concurrency limit, plus the Observer and the CLIENT spans of
// TracingCalls. In cmd/ the tracer provider comes from otelsetup and the
// registry is served with promhttp.HandlerFor; here a span recorder and a
// registry keep what was recorded, and the log shows warnings and up.
func Example_standard() {
	m := telemetry.NewMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	prop := propagation.TraceContext{}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, middleware.LogDuration, middleware.LogSessionID, "stack":
				return slog.Attr{} // they vary from run to run
			}
			return a
		},
	}))

	srv := server.New(
		server.WithMiddleware(middleware.Standard(middleware.StandardConfig{
			TracerProvider:   tp,
			Propagator:       prop,
			Metrics:          m,
			Logger:           logger,
			Timeout:          30 * time.Second,
			ConcurrencyLimit: 8,
		})...),
		server.WithObserver(middleware.Observer(m)),
		server.WithCallMiddleware(middleware.TracingCalls(middleware.WithTracerProvider(tp), middleware.WithPropagators(prop))),
	)
	_ = srv.AddTool(server.Tool{Name: "greet"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	})
	_ = srv.AddTool(server.Tool{Name: "crash"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		panic("oops")
	})
	m.SetToolNames(srv.ToolNames())

	// A client session over the memory transport.
	client, end := memory.NewPair()
	served := make(chan error, 1)
	go func() {
		served <- middleware.Instrument(srv, m, telemetry.TransportMemory).Serve(context.Background(), end)
	}()
	var answers []string
	call := func(id int64, method, params string) {
		_ = client.Write(context.Background(), &transport.Request{ID: transport.Int64ID(id), Method: method, Params: json.RawMessage(params)})
		if resp, err := client.Read(context.Background()); err == nil && resp.(*transport.Response).Error != nil {
			answers = append(answers, fmt.Sprintf("answer %d: %s", id, resp.(*transport.Response).Error.Message))
		}
	}
	call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}`)
	call(2, "tools/call", `{"name":"greet"}`)
	call(3, "tools/call", `{"name":"crash"}`)
	_ = client.Close()
	if err := <-served; err != nil { // every span has ended and every request is counted
		fmt.Println("serve:", err)
	}

	for _, a := range answers {
		fmt.Println(a)
	}
	var ended []string
	for _, s := range spans.Ended() {
		ended = append(ended, fmt.Sprintf("span %q: %s", s.Name(), s.Status().Code))
	}
	slices.Sort(ended)
	for _, s := range ended {
		fmt.Println(s)
	}
	families, _ := reg.Gather()
	for _, mf := range families {
		if mf.GetName() != telemetry.MetricRequestsFinished {
			continue
		}
		for _, metric := range mf.GetMetric() {
			if v := metric.GetCounter().GetValue(); v != 0 {
				fmt.Printf("finished %s %s: %v\n", metric.GetLabel()[0].GetValue(), metric.GetLabel()[1].GetValue(), v)
			}
		}
	}
	// Output:
	// level=ERROR msg="handler panicked" method=tools/call id=3 panic=oops
	// level=WARN msg=request method=tools/call tool=crash request_id=3 outcome=error code=-32603 error="panic: oops"
	// answer 3: internal error
	// span "initialize": Unset
	// span "tools/call crash": Error
	// span "tools/call greet": Unset
	// finished initialize ok: 1
	// finished tools/call error: 1
	// finished tools/call ok: 1
}
