package debugpage

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

	"github.com/vigil-mcp/vigil/internal/receiving"
)

// newSpanRing returns a ring that keeps the last maxTraces (at least 1)
// routine traces, and the others of the retention policy, within the
// default byte budget.
func newSpanRing(maxTraces int) *spanRing {
	return newSpanRingLimits(ringLimits{Recent: maxTraces, MaxBytes: ringMaxBytes})
}

// ringProvider returns a tracer whose spans reach ring as they end, as
// vigil's (otelsetup.WithSyncFallback with a SpanReceiver).
func ringProvider(t *testing.T, ring *spanRing, opts ...sdktrace.TracerProviderOption) trace.Tracer {
	t.Helper()
	tp, shutdown := receiving.NewProvider(ring, opts...)
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

// factsCheck is a SpanReceiver with the ring's watched attributes that
// compares, for each span it receives, the facts the ring takes from what
// the provider saw with those it reads from the span itself.
type factsCheck struct {
	*spanRing
	t        *testing.T
	received int
}

func (c *factsCheck) ReceiveSpan(rs *receiving.ReceivedSpan) {
	c.received++
	var seen, read spanFacts
	read.read(rs.Span)
	if !rs.Counted {
		return // the ring reads it as read does
	}
	seen.readReceived(rs)
	if strings.HasSuffix(rs.Span.Name(), "twice") { // counted each time: more, never less
		assert.Greater(c.t, seen.bytes, read.bytes, "%s", rs.Span.Name())
		seen.bytes = read.bytes
	}
	assert.Equal(c.t, read, seen, "%s", rs.Span.Name())
}

// The facts of a received span (size, cancel cause, error type, whether to
// compact it) are those the ring would read from its attributes, whatever
// the span carries: the request spans of middleware.WithTracerProvider and others.
func TestSpanRingReceivedFacts(t *testing.T) {
	check := &factsCheck{spanRing: newSpanRing(10), t: t}
	tp, shutdown := receiving.NewProvider(check)
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	tracer := tp.Tracer("facts")
	spans := []func(trace.Span){
		func(s trace.Span) {
			s.SetAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", "echo"),
				attribute.String("jsonrpc.request.id", "7"), attribute.Int("n", 3), attribute.Bool("b", true), attribute.Float64("f", 0.5))
		},
		func(s trace.Span) { // cancelled, as middleware.WithTracerProvider ends it
			cause := attribute.String("vigil.cancel.cause", "client_cancel")
			s.SetAttributes(cause)
			s.AddEvent("cancelled", trace.WithAttributes(cause))
			s.AddEvent("response_dropped", trace.WithAttributes(attribute.String("vigil.drop.reason", "cancelled")))
		},
		func(s trace.Span) { // a tool error
			s.SetAttributes(attribute.String("error.type", "tool_error"))
			s.SetStatus(codes.Error, "")
		},
		func(s trace.Span) { // the error type set twice (see the name): the last counts
			s.SetAttributes(attribute.String("error.type", "first"))
			s.SetAttributes(attribute.String("error.type", "-32603"))
			s.SetStatus(codes.Error, "internal error")
		},
		func(s trace.Span) { s.SetAttributes(attribute.String("big", strings.Repeat("b", ringSpanMaxBytes))) },
		func(s trace.Span) { s.SetAttributes(attribute.StringSlice("list", []string{"a", "b"})) },
		func(s trace.Span) { s.SetAttributes(attribute.Int("vigil.cancel.cause", 3)) }, // not a string: no cause
		func(trace.Span) {},
	}
	for i, write := range spans {
		name := fmt.Sprint("span ", i)
		if i == 3 {
			name += " with a key set twice"
		}
		_, span := tracer.Start(context.Background(), name, trace.WithSpanKind(trace.SpanKindServer))
		write(span)
		span.End()
	}
	_, withStart := tracer.Start(context.Background(), "start attributes", trace.WithAttributes(attribute.String("error.type", "x")))
	withStart.End()
	assert.Equal(t, len(spans)+1, check.received)
}
