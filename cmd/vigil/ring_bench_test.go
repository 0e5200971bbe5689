package main

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// ringBenchSpans returns n ended spans as the shipped binary's tools/call
// spans look, each the root of its own trace (a request without a parent).
func ringBenchSpans(n int) []sdktrace.ReadOnlySpan {
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", "echo"),
		attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("jsonrpc.request.id", "12"),
		attribute.String("mcp.session.id", "6ba7b8109dad11d180b400c04fd430c8"), attribute.String("mcp.protocol.version", "2025-11-25"),
		attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http"),
	}
	start := time.Unix(1_700_000_000, 0)
	stubs := make(tracetest.SpanStubs, n)
	for i := range stubs {
		var tid trace.TraceID
		var sid trace.SpanID
		tid[0], tid[1], tid[2], tid[15] = byte(i), byte(i>>8), byte(i>>16), 1
		sid[0], sid[7] = byte(i), 1
		stubs[i] = tracetest.SpanStub{
			Name:        "tools/call echo",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
			SpanKind:    trace.SpanKindServer,
			StartTime:   start,
			EndTime:     start.Add(time.Millisecond),
			Attributes:  attrs,
		}
	}
	return stubs.Snapshots()
}

// BenchmarkSpanRingExport: the ring's cost per span as the batch span
// processor hands it spans (batches of 512, each span a new trace, the ring
// full), which the shipped binary pays for every request.
func BenchmarkSpanRingExport(b *testing.B) {
	const batch = 512
	spans := ringBenchSpans(4 * batch)
	ring := newSpanRing(defaultRingTraces)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		off := (i / batch % 4) * batch
		if err := ring.ExportSpans(ctx, spans[off:off+min(batch, b.N-i)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSpanRingSnapshot: rendering the debug page's traces from a full
// ring.
func BenchmarkSpanRingSnapshot(b *testing.B) {
	ring := newSpanRing(defaultRingTraces)
	if err := ring.ExportSpans(context.Background(), ringBenchSpans(defaultRingTraces)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(ring.snapshot()) != defaultRingTraces {
			b.Fatal("traces lost")
		}
	}
}
