package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/telemetry/otelsetup"
)

// ringProvider returns a tracer whose spans reach ring as they end, as
// vigil's (otelsetup.WithSyncFallback with a SpanReceiver).
func ringProvider(t *testing.T, ring *spanRing, opts ...sdktrace.TracerProviderOption) trace.Tracer {
	t.Helper()
	tp, shutdown := otelsetup.NewReceivingProvider(ring, opts...)
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	return tp.Tracer("ring-test")
}

// rootNames returns the root span name of each trace, in snapshot order.
func rootNames(traces []traceView) []string {
	names := make([]string, len(traces))
	for i, tv := range traces {
		names[i] = tv.Root
	}
	return names
}

// recentViews returns the views of the ring's routine traces, newest first.
func recentViews(t *testing.T, ring *spanRing) []traceView {
	t.Helper()
	var views []traceView
	for _, s := range ring.list(traceFilter{Class: classRecent}) {
		id, err := trace.TraceIDFromHex(s.TraceID)
		require.NoError(t, err)
		v, ok := ring.lookup(id)
		require.True(t, ok, s.TraceID)
		views = append(views, v)
	}
	return views
}

// The ring keeps the newest routine traces, newest first, each with all
// its spans.
func TestSpanRingKeepsNewestTraces(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		traces int
		want   []string
	}{
		{name: "under the limit", limit: 3, traces: 2, want: []string{"t1", "t0"}},
		{name: "at the limit", limit: 3, traces: 3, want: []string{"t2", "t1", "t0"}},
		{name: "over the limit", limit: 3, traces: 7, want: []string{"t6", "t5", "t4"}},
		{name: "limit 1", limit: 1, traces: 4, want: []string{"t3"}},
		{name: "limit 0 keeps one", limit: 0, traces: 2, want: []string{"t1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ring := newSpanRing(tt.limit)
			tracer := ringProvider(t, ring)
			for i := range tt.traces {
				ctx, root := tracer.Start(context.Background(), fmt.Sprintf("t%d", i))
				_, child := tracer.Start(ctx, fmt.Sprintf("t%d child", i))
				child.End()
				root.End()
			}
			got := recentViews(t, ring)
			require.Equal(t, tt.want, rootNames(got))
			for _, tv := range got {
				require.Len(t, tv.Spans, 2, tv.Root)
				assert.Equal(t, []int{0, 1}, []int{tv.Spans[0].Depth, tv.Spans[1].Depth})
				assert.Equal(t, tv.Root+" child", tv.Spans[1].Name)
				assert.Equal(t, tv.Spans[0].SpanID, tv.Spans[1].ParentSpanID)
			}
		})
	}
}

// recordOnly samples nothing, but records every span.
type recordOnly struct{}

func (recordOnly) ShouldSample(sdktrace.SamplingParameters) sdktrace.SamplingResult {
	return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
}
func (recordOnly) Description() string { return "recordOnly" }

// As its provider's span processor, the ring keeps sampled spans only, as
// an exporter behind sdktrace.WithSyncer would.
func TestSpanRingKeepsSampledSpansOnly(t *testing.T) {
	ring := newSpanRing(10)
	_, span := ringProvider(t, ring, sdktrace.WithSampler(recordOnly{})).Start(context.Background(), "recorded, not sampled")
	require.True(t, span.IsRecording())
	span.End()
	_, span = ringProvider(t, ring).Start(context.Background(), "sampled")
	span.End()
	assert.Equal(t, []string{"sampled"}, rootNames(recentViews(t, ring)))
}

// Spans arrive before their parents (children end first); the snapshot
// orders each trace as a tree, siblings by start time, and summarizes it.
func TestSpanRingTreeOrder(t *testing.T) {
	ring := newSpanRing(10)
	tracer := ringProvider(t, ring)
	ctx, root := tracer.Start(context.Background(), "tools/call confirm_action", trace.WithSpanKind(trace.SpanKindServer))
	actx, a := tracer.Start(ctx, "elicitation/create", trace.WithSpanKind(trace.SpanKindClient))
	_, a1 := tracer.Start(actx, "a1")
	a1.End()
	a.End()
	_, b := tracer.Start(ctx, "b")
	b.SetAttributes(attribute.String("gen_ai.tool.name", "confirm_action"))
	b.AddEvent("cancelled", trace.WithAttributes(attribute.String("vigil.cancel.cause", "timeout")))
	b.SetStatus(codes.Error, "boom")
	b.End()
	root.End()

	got := ring.snapshot()
	require.Len(t, got, 1)
	tv := got[0]
	var names []string
	var depths []int
	for _, s := range tv.Spans {
		names = append(names, s.Name)
		depths = append(depths, s.Depth)
	}
	assert.Equal(t, []string{"tools/call confirm_action", "elicitation/create", "a1", "b"}, names)
	assert.Equal(t, []int{0, 1, 2, 1}, depths)
	assert.Equal(t, "tools/call confirm_action", tv.Root)
	assert.True(t, tv.Error, "a span failed")
	assert.Equal(t, "server", tv.Spans[0].Kind)
	assert.Equal(t, "client", tv.Spans[1].Kind)
	last := tv.Spans[3]
	assert.Equal(t, "error", last.Status)
	assert.Equal(t, "boom", last.StatusDescription)
	assert.Equal(t, map[string]string{"gen_ai.tool.name": "confirm_action"}, last.Attributes)
	require.Len(t, last.Events, 1)
	assert.Equal(t, "cancelled", last.Events[0].Name)
	assert.Equal(t, map[string]string{"vigil.cancel.cause": "timeout"}, last.Events[0].Attributes)
	assert.Equal(t, "unset", tv.Spans[0].Status)
	assert.GreaterOrEqual(t, tv.DurationMS, tv.Spans[0].DurationMS)
}

// A trace keeps at most ringSpansPerTrace spans and counts the rest.
func TestSpanRingBoundsSpansPerTrace(t *testing.T) {
	ring := newSpanRing(2)
	tracer := ringProvider(t, ring)
	ctx, root := tracer.Start(context.Background(), "root")
	for range ringSpansPerTrace + 44 {
		_, s := tracer.Start(ctx, "child")
		s.End()
	}
	root.End()
	got := ring.snapshot()
	require.Len(t, got, 1)
	assert.Len(t, got[0].Spans, ringSpansPerTrace)
	assert.Equal(t, 45, got[0].DroppedSpans, "44 children and the root, which ended last")
}

// A long attribute value is cut.
func TestSpanRingCutsLongAttributes(t *testing.T) {
	ring := newSpanRing(1)
	tracer := ringProvider(t, ring)
	long := []byte(strings.Repeat("x", 1000))
	_, s := tracer.Start(context.Background(), "s", trace.WithAttributes(attribute.String("big", string(long))))
	s.End()
	got := ring.snapshot()
	require.Len(t, got, 1)
	assert.Equal(t, string(long[:ringAttrValueMaxLen])+"…", got[0].Spans[0].Attributes["big"])
}
