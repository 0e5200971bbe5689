package otelsetup

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// newOTLPHTTPSpanExporter is OTLP over HTTP for spans: otlptrace's
// exporter, which turns spans into their protobuf form, with a client that
// posts them to /v1/traces (see otlpHTTP).
func newOTLPHTTPSpanExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	c, err := newOTLPHTTP("TRACES", "/v1/traces")
	if err != nil {
		return nil, err
	}
	return otlptrace.New(ctx, traceClient{c})
}

// traceClient is an otlptrace.Client over otlpHTTP.
type traceClient struct{ c *otlpHTTP }

func (traceClient) Start(context.Context) error { return nil }

func (t traceClient) Stop(context.Context) error {
	t.c.close()
	return nil
}

// UploadTraces posts an ExportTraceServiceRequest holding spans.
func (t traceClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	var body []byte
	for _, rs := range spans {
		var err error
		if body, err = appendRepeated(body, rs); err != nil {
			return err
		}
	}
	return t.c.export(ctx, body)
}
