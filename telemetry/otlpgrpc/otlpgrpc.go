// Package otlpgrpc is OTLP over gRPC for a Vigil service, for those who
// ask for it: a service sends its spans (and, with OTEL_METRICS_EXPORTER=otlp,
// its metrics) over OTLP/HTTP by default, and links no gRPC; with this
// package's exporters given to vigil.New, OTEL_EXPORTER_OTLP_PROTOCOL=grpc
// (or OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_METRICS_PROTOCOL)
// sends them over gRPC:
//
//	svc := vigil.New("weather", "1.0.0", vigil.WithOTLPGRPC(otlpgrpc.NewSpanExporter, otlpgrpc.NewMetricExporter))
//
// Importing it registers nothing: the exporters are used only where they
// are given. They read the OTEL_EXPORTER_OTLP_* variables as the
// OpenTelemetry exporters otlptracegrpc and otlpmetricgrpc do.
package otlpgrpc

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// NewSpanExporter returns an OTLP span exporter over gRPC configured by
// the OTEL_EXPORTER_OTLP_* environment (otlptracegrpc.New).
func NewSpanExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	return otlptracegrpc.New(ctx)
}

// NewMetricExporter returns an OTLP metric exporter over gRPC configured
// by the OTEL_EXPORTER_OTLP_* environment (otlpmetricgrpc.New).
func NewMetricExporter(ctx context.Context) (sdkmetric.Exporter, error) {
	return otlpmetricgrpc.New(ctx)
}
