package otelsetup_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-mcp/vigil/internal/otelsetup"
)

// printExporter prints the spans it is given.
type printExporter struct{}

func (printExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	for _, s := range spans {
		var name, version string
		for _, kv := range s.Resource().Attributes() {
			switch kv.Key {
			case "service.name":
				name = kv.Value.AsString()
			case "service.version":
				version = kv.Value.AsString()
			}
		}
		fmt.Printf("exported %q from %s %s\n", s.Name(), name, version)
	}
	return nil
}

func (printExporter) Shutdown(context.Context) error { return nil }

// With OTEL_TRACES_EXPORTER and the OTLP endpoint unset, spans go to the
// fallback exporter; set OTEL_TRACES_EXPORTER=otlp (or an endpoint) and the
// same code exports over OTLP. The shutdown flushes the batch.
func ExampleTracerProvider() {
	ctx := context.Background()
	tp, shutdown, err := otelsetup.TracerProvider(ctx,
		otelsetup.WithService("vigil-example", "1.0.0"),
		otelsetup.WithFallbackExporter(func(context.Context) (sdktrace.SpanExporter, error) {
			return printExporter{}, nil
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	// cmd/ would now call otel.SetTracerProvider(tp), or pass tp to
	// middleware.NewInstrumentation(middleware.WithTracerProvider(tp)).
	_, span := tp.Tracer("example").Start(ctx, "tools/call greet")
	span.End()
	if err := shutdown(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// exported "tools/call greet" from vigil-example 1.0.0
}
