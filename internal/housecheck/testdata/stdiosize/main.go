// Command stdiosize is the smallest instrumented stdio server: one tool,
// the middleware's metrics and traces, served on standard input and
// output. docs/performance.md gives its binary size, which says what such
// a server links; TestDependenciesFollowUse holds its dependencies to
// those of the packages it imports.
package main

import (
	"context"
	"log"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(ctx) }()
	inst, err := middleware.NewInstrumentation(middleware.WithTracerProvider(tp), middleware.WithRegisterer(prometheus.NewRegistry()))
	if err != nil {
		return err
	}
	srv := server.New(inst.ServerOptions()...)
	if err := srv.AddTool(server.Tool{Name: "hello"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	}); err != nil {
		return err
	}
	return inst.ConnServer(srv, telemetry.TransportStdio).Serve(ctx, stdio.Std())
}
