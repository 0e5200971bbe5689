package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// ExampleWithTracerProvider traces a session: one SERVER span per request and
// notification, whose parent is the traceparent the client put in
// params._meta. In cmd/ and the package vigil the provider comes from the OTEL_* environment;
// here a span recorder keeps the spans.
func ExampleWithTracerProvider() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	inst, err := middleware.NewInstrumentation(
		middleware.WithTracerProvider(tp), // SERVER spans, and CLIENT spans for sampling, elicitation, roots
		middleware.WithPropagators(propagation.TraceContext{}),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := server.New(inst.ServerOptions()...)
	_ = srv.AddTool(server.Tool{Name: "greet"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	})

	client, end := memory.NewPair()
	served := make(chan error, 1)
	go func() {
		ctx := mcpconv.ContextWithTransport(context.Background(), telemetry.TransportMemory)
		served <- srv.Serve(ctx, end)
	}()
	send := func(id int64, method, params string) {
		m := &transport.Request{Method: method, Params: json.RawMessage(params)}
		if id != 0 {
			m.ID = transport.Int64ID(id)
		}
		_ = client.Write(context.Background(), m)
		if id != 0 {
			_, _ = client.Read(context.Background())
		}
	}
	send(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}`)
	send(0, "notifications/initialized", `{}`)
	send(2, "tools/call", `{"name":"greet","_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`)
	_ = client.Close()
	if err := <-served; err != nil { // every span has ended once Serve returns
		fmt.Println(err)
	}

	for _, s := range rec.Ended() {
		parent := "root"
		if s.Parent().IsValid() {
			parent = "parent " + s.Parent().TraceID().String() + "/" + s.Parent().SpanID().String()
		}
		fmt.Printf("%s (%s) %s\n", s.Name(), s.SpanKind(), parent)
	}
	// Output:
	// initialize (server) root
	// notifications/initialized (server) root
	// tools/call greet (server) parent 0af7651916cd43dd8448eb211c80319c/b7ad6b7169203331
}

// ExampleLogHandler adds the trace, span, session and request ids from the
// context to every record logged with it.
func ExampleLogHandler() {
	out := slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // for a stable output
			}
			return a
		},
	})
	logger := slog.New(middleware.LogHandler(out))

	// A handler's context carries its span and its request; here, a span.
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
		SpanID:  trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	logger.InfoContext(ctx, "tool ran", "tool", "greet")
	// Output:
	// {"level":"INFO","msg":"tool ran","tool":"greet","trace_id":"0af7651916cd43dd8448eb211c80319c","span_id":"b7ad6b7169203331"}
}
