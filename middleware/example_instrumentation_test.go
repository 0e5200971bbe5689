package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// Example_instrumentation wires a server with every middleware of the
// package, through NewInstrumentation, in the documented order: Tracing,
// Metrics, Logging, Recover, Timeout and a per-tool concurrency limit, plus
// the metrics observer and the CLIENT spans of TracingCalls. In cmd/ the
// tracer provider comes from otelsetup and the registry is served with
// promhttp.HandlerFor; here a span recorder and a registry keep what was
// recorded, and the log shows warnings and up.
func Example_instrumentation() {
	reg := prometheus.NewRegistry()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "duration_seconds", "session_id", "stack":
				return slog.Attr{} // they vary from run to run
			}
			return a
		},
	}))

	inst, err := middleware.NewInstrumentation(
		middleware.WithTracerProvider(tp),
		middleware.WithPropagators(propagation.TraceContext{}),
		middleware.WithRegisterer(reg),
		middleware.WithRequestLog(logger),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := server.New(append(inst.ServerOptions(), server.WithTimeout(30*time.Second), server.WithConcurrencyLimit(8))...)
	_ = srv.AddTool(server.Tool{Name: "greet"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	})
	_ = srv.AddTool(server.Tool{Name: "crash"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		panic("oops")
	})

	// A client session over the memory transport.
	conns := inst.ConnServer(srv, telemetry.TransportMemory)
	client, end := memory.NewPair()
	served := make(chan error, 1)
	go func() { served <- conns.Serve(context.Background(), end) }()
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
		if mf.GetName() != mcpconv.MetricRequestsFinished {
			continue
		}
		for _, metric := range mf.GetMetric() {
			if v := metric.GetCounter().GetValue(); v != 0 {
				var labels []string
				for _, l := range metric.GetLabel() {
					if l.GetValue() != "" {
						labels = append(labels, l.GetName()+"="+l.GetValue())
					}
				}
				fmt.Printf("finished %s: %v\n", strings.Join(labels, " "), v)
			}
		}
	}
	// Output:
	// level=ERROR msg="handler panicked" method=tools/call id=3 panic=oops
	// level=WARN msg=request method=tools/call tool=crash request_id=3 outcome=error code=-32603 error="panic: oops" error_type=-32603
	// answer 3: internal error
	// span "initialize": Unset
	// span "tools/call crash": Error
	// span "tools/call greet": Unset
	// finished mcp_method_name=initialize outcome=ok: 1
	// finished gen_ai_tool_name=greet mcp_method_name=tools/call outcome=ok: 1
	// finished error_type=-32603 gen_ai_tool_name=crash mcp_method_name=tools/call outcome=error rpc_response_status_code=-32603: 1
}

// ExampleNewInstrumentation instruments a server with one value: spans,
// metrics, request logs and panic recovery, and the transport label and
// traffic counters of its connections. Tools are labeled from the server's
// registry, even those added after the server was built.
func ExampleNewInstrumentation() {
	reg := prometheus.NewRegistry() // served with promhttp.HandlerFor(reg, ...) in cmd/
	inst, err := middleware.NewInstrumentation(
		middleware.WithTracerProvider(sdktrace.NewTracerProvider()), // from otelsetup in cmd/
		middleware.WithRegisterer(reg),
		middleware.WithRequestLog(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := server.New(append(inst.ServerOptions(), server.WithImplementation("weather", "1.0"))...)
	_ = srv.AddTool(server.Tool{Name: "get_weather"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("sunny"), nil
	})
	conns := inst.ConnServer(srv, telemetry.TransportMemory) // e.g. streamable.New(inst.ConnServer(srv, telemetry.TransportStreamableHTTP))

	// A client calls the tool and one that does not exist.
	client, end := memory.NewPair()
	served := make(chan error, 1)
	go func() { served <- conns.Serve(context.Background(), end) }()
	for i, params := range []string{
		`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}`,
		`{"name":"get_weather"}`,
		`{"name":"get_forecast"}`,
	} {
		method := "tools/call"
		if i == 0 {
			method = "initialize"
		}
		_ = client.Write(context.Background(), &transport.Request{ID: transport.Int64ID(int64(i + 1)), Method: method, Params: json.RawMessage(params)})
		_, _ = client.Read(context.Background())
	}
	_ = client.Close()
	if err := <-served; err != nil {
		fmt.Println("serve:", err)
	}

	families, _ := reg.Gather()
	for _, mf := range families {
		if mf.GetName() != mcpconv.MetricOperationDuration {
			continue
		}
		for _, metric := range mf.GetMetric() {
			if n := metric.GetHistogram().GetSampleCount(); n != 0 {
				var labels []string
				for _, l := range metric.GetLabel() {
					labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				fmt.Println(strings.Join(labels, " "), n)
			}
		}
	}
	// Output:
	// error_type="" gen_ai_tool_name="" mcp_method_name="initialize" mcp_protocol_version="2025-11-25" network_protocol_name="" network_transport="pipe" rpc_response_status_code="" 1
	// error_type="" gen_ai_tool_name="get_weather" mcp_method_name="tools/call" mcp_protocol_version="2025-11-25" network_protocol_name="" network_transport="pipe" rpc_response_status_code="" 1
	// error_type="" gen_ai_tool_name="other" mcp_method_name="tools/call" mcp_protocol_version="2025-11-25" network_protocol_name="" network_transport="pipe" rpc_response_status_code="-32602" 1
}
