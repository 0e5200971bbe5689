package vigil_test

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil"
)

// TestOTLPOverGRPCIsAskedFor: a service links no gRPC, so that
// OTEL_EXPORTER_OTLP_PROTOCOL=grpc fails New with an error that says how
// to ask for it; with WithOTLPGRPC's exporters, the same environment
// builds the service, and they are the ones used for spans and metrics
// (stand-ins here for OpenTelemetry's otlptracegrpc.New and
// otlpmetricgrpc.New).
func TestOTLPOverGRPCIsAskedFor(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_METRICS_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")

	svc := vigil.New("weather", "1.0.0", vigil.WithPage(nil))
	require.ErrorContains(t, svc.Err(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc: this program does not link OTLP over gRPC; give vigil.New the option vigil.WithOTLPGRPC(otlptracegrpc.New, otlpmetricgrpc.New)")

	var spans, metrics int
	svc = vigil.New("weather", "1.0.0", vigil.WithPage(nil), vigil.WithOTLPGRPC(
		func(context.Context, ...any) (sdktrace.SpanExporter, error) {
			spans++
			return tracetest.NewInMemoryExporter(), nil
		},
		func(context.Context, ...any) (sdkmetric.Exporter, error) {
			metrics++
			return stdoutmetric.New(stdoutmetric.WithWriter(io.Discard))
		}))
	require.NoError(t, svc.Err())
	assert.Equal(t, 1, spans, "the span exporter built once")
	assert.Equal(t, 1, metrics, "the metric exporter built once")
	require.NoError(t, svc.Shutdown(t.Context()))
}
