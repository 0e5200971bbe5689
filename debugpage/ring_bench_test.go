package debugpage

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
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
	ring := newSpanRing(DefaultTraceRing)
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
	ring := newSpanRing(DefaultTraceRing)
	if err := ring.ExportSpans(context.Background(), ringBenchSpans(DefaultTraceRing)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(ring.snapshot()) != DefaultTraceRing {
			b.Fatal("traces lost")
		}
	}
}

// ringMixedSpans returns the spans of n requests over 8 tools: each a
// SERVER root and, for one in four, a CLIENT child (an elicitation) that
// ends first; one in ten fails with a tool error, one in fifty is
// cancelled, and durations vary, so that every store of the ring works.
func ringMixedSpans(n int) []sdktrace.ReadOnlySpan {
	base := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"), attribute.String("jsonrpc.request.id", "12"),
		attribute.String("mcp.session.id", "6ba7b8109dad11d180b400c04fd430c8"), attribute.String("network.transport", "tcp"),
	}
	start := time.Unix(1_700_000_000, 0)
	var stubs tracetest.SpanStubs
	for i := range n {
		var tid trace.TraceID
		tid[0], tid[1], tid[2], tid[15] = byte(i), byte(i>>8), byte(i>>16), 2
		root := trace.SpanID{byte(i), byte(i >> 8), 1}
		tool := fmt.Sprintf("tool%d", i%8)
		attrs := append(slices.Clip(base), attribute.String("gen_ai.tool.name", tool))
		s := tracetest.SpanStub{
			Name:        "tools/call " + tool,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: root, TraceFlags: trace.FlagsSampled}),
			SpanKind:    trace.SpanKindServer,
			StartTime:   start,
			EndTime:     start.Add(time.Duration(i*7919%1000) * time.Microsecond),
		}
		switch {
		case i%50 == 7:
			attrs = append(attrs, attribute.String("vigil.cancel.cause", "client_cancel"))
		case i%10 == 3:
			attrs = append(attrs, attribute.String("error.type", "tool_error"))
			s.Status = sdktrace.Status{Code: codes.Error}
		}
		s.Attributes = attrs
		if i%4 == 0 {
			stubs = append(stubs, tracetest.SpanStub{
				Name:        "elicitation/create",
				SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{byte(i), byte(i >> 8), 2}, TraceFlags: trace.FlagsSampled}),
				Parent:      s.SpanContext,
				SpanKind:    trace.SpanKindClient,
				StartTime:   start,
				EndTime:     start.Add(time.Microsecond),
				Attributes:  base[:1],
			})
		}
		stubs = append(stubs, s)
	}
	return stubs.Snapshots()
}

// BenchmarkSpanRingExportMixed: the ring's cost per span with children,
// failures, cancellations and slow calls among the requests (batches of
// 512 spans, the ring in a steady state).
func BenchmarkSpanRingExportMixed(b *testing.B) {
	const batch = 512
	spans := ringMixedSpans(8 * batch)
	ring := newSpanRing(DefaultTraceRing)
	ctx := context.Background()
	for off := 0; off < len(spans); off += batch { // the steady state: every store full
		_ = ring.ExportSpans(ctx, spans[off:min(off+batch, len(spans))])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		off := i % (len(spans) - batch)
		if err := ring.ExportSpans(ctx, spans[off:off+min(batch, b.N-i)]); err != nil {
			b.Fatal(err)
		}
	}
}
