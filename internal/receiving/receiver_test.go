package receiving_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/otelsetup"
	"github.com/vigil-mcp/vigil/internal/receiving"
)

// receiver is a SpanReceiver that keeps what reaches it each way.
type receiver struct {
	keptExporter
	watch    []attribute.Key
	mu       sync.Mutex
	received []sdktrace.ReadOnlySpan
	seen     []receiving.ReceivedSpan // with each span, what the provider saw of its attributes
	shutdown int
}

func newReceiver(watch ...attribute.Key) *receiver {
	return &receiver{keptExporter: newKept(), watch: watch}
}

func (r *receiver) ReceiveSpan(rs *receiving.ReceivedSpan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.received = append(r.received, rs.Span)
	r.seen = append(r.seen, *rs) // rs is the provider's: copied
}

func (r *receiver) WatchedAttributes() []attribute.Key { return r.watch }

func (r *receiver) Shutdown(context.Context) error {
	r.shutdown++
	return nil
}

func (r *receiver) spans() []sdktrace.ReadOnlySpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sdktrace.ReadOnlySpan(nil), r.received...)
}

// TestTracerProviderSyncFallbackReceiver: a sync fallback exporter that is
// a SpanReceiver gets each span once, ended, through ReceiveSpan (never
// ExportSpans); children started from the context or from the span's
// provider reach it too, with their parent; shutdown shuts it down.
func TestTracerProviderSyncFallbackReceiver(t *testing.T) {
	setEnv(t, nil)
	r := newReceiver()
	tp, shutdown, err := otelsetup.TracerProvider(t.Context(), otelsetup.WithSyncFallback(),
		otelsetup.WithFallbackExporter(func(context.Context) (sdktrace.SpanExporter, error) { return r, nil }))
	require.NoError(t, err)
	tracer := tp.Tracer("t")

	ctx, root := tracer.Start(t.Context(), "root")
	assert.Same(t, root, trace.SpanFromContext(ctx), "the context carries the span that reports its end")
	_, child := tracer.Start(ctx, "child")
	_, grandchild := root.TracerProvider().Tracer("other").Start(ctx, "from the span's provider")
	grandchild.End()
	child.End()
	assert.Len(t, r.spans(), 2, "each span as it ends")
	root.End()
	root.End() // a second End reports nothing
	spans := r.spans()
	require.Len(t, spans, 3)
	assert.Equal(t, []string{"from the span's provider", "child", "root"},
		[]string{spans[0].Name(), spans[1].Name(), spans[2].Name()})
	for _, s := range spans {
		assert.False(t, s.EndTime().IsZero(), "%s: ended before it is received", s.Name())
	}
	rootID := spans[2].SpanContext().SpanID()
	assert.Equal(t, rootID, spans[0].Parent().SpanID())
	assert.Equal(t, rootID, spans[1].Parent().SpanID())
	assert.Empty(t, r.GetSpans(), "ExportSpans is never called")

	require.NoError(t, shutdown(t.Context()))
	assert.Equal(t, 1, r.shutdown)
}

// TestReceivingProviderUnsampled: a span that is not sampled, recorded or
// not, never reaches the receiver.
func TestReceivingProviderUnsampled(t *testing.T) {
	for name, sampler := range map[string]sdktrace.Sampler{
		"dropped":  sdktrace.NeverSample(),
		"recorded": recordOnly{},
	} {
		t.Run(name, func(t *testing.T) {
			r := newReceiver()
			tp, shutdown := receiving.NewProvider(r, sdktrace.WithSampler(sampler))
			t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
			_, span := tp.Tracer("t").Start(t.Context(), "unsampled")
			span.End()
			assert.Empty(t, r.spans())
		})
	}
}

// recordOnly records every span without sampling it.
type recordOnly struct{}

func (recordOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
}

func (recordOnly) Description() string { return "record only" }

// TestReceivingProviderPanic: a span ended by a deferred End while a panic
// unwinds records the panic as an exception event, as the SDK's End does,
// reaches the receiver, and the panic goes on.
func TestReceivingProviderPanic(t *testing.T) {
	r := newReceiver()
	tp, shutdown := receiving.NewProvider(r)
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	recovered := func() (v any) {
		defer func() { v = recover() }()
		_, span := tp.Tracer("t").Start(t.Context(), "panics")
		defer span.End()
		panic("boom")
	}()
	assert.Equal(t, "boom", recovered, "the panic goes on")
	spans := r.spans()
	require.Len(t, spans, 1)
	events := spans[0].Events()
	require.Len(t, events, 1)
	assert.Equal(t, "exception", events[0].Name)
	attrs := map[string]string{}
	for _, kv := range events[0].Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	assert.Equal(t, map[string]string{"exception.type": "string", "exception.message": "boom"}, attrs)
}

// nopProcessor takes spans as a span processor does, and drops them.
type nopProcessor struct{}

func (nopProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (nopProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (nopProcessor) Shutdown(context.Context) error                  { return nil }
func (nopProcessor) ForceFlush(context.Context) error                { return nil }

// TestReceivingProviderAllocatesLess: a span of a receiving provider costs
// no more allocations, and fewer bytes, than one of a provider with a
// span processor, which the SDK snapshots when it ends, whether its
// attributes are set after the start, as middleware.WithTracerProvider sets them, or
// given to Start.
func TestReceivingProviderAllocatesLess(t *testing.T) {
	recv, shutdown := receiving.NewProvider(discard{})
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	proc := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(nopProcessor{}))
	t.Cleanup(func() { require.NoError(t, proc.Shutdown(context.Background())) })
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.tool.name", "echo"), attribute.String("jsonrpc.request.id", "1"),
	}
	perSpan := func(tp trace.TracerProvider, atStart bool) (allocs, bytes float64) {
		const runs = 2000
		tracer := tp.Tracer("t")
		ctx := context.Background()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			if atStart {
				_, span := tracer.Start(ctx, "s", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
				span.End()
				continue
			}
			_, span := tracer.Start(ctx, "s", trace.WithSpanKind(trace.SpanKindServer))
			span.SetAttributes(attrs...)
			span.End()
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / runs, float64(after.TotalAlloc-before.TotalAlloc) / runs
	}
	for _, atStart := range []bool{false, true} {
		recvAllocs, recvBytes := perSpan(recv, atStart)
		procAllocs, procBytes := perSpan(proc, atStart)
		t.Logf("attributes at the start %v, per span: receiver %v allocations, %v bytes; processor %v allocations, %v bytes",
			atStart, recvAllocs, recvBytes, procAllocs, procBytes)
		assert.LessOrEqual(t, math.Round(recvAllocs), math.Round(procAllocs), "at the start: %v", atStart)
		assert.Less(t, recvBytes, procBytes-128, "at the start: %v: the snapshot, at least, is spared", atStart)
	}
}

// discard is a SpanReceiver that keeps nothing.
type discard struct{ keptExporter }

func (discard) ReceiveSpan(*receiving.ReceivedSpan) {}
func (discard) WatchedAttributes() []attribute.Key  { return nil }

// TestReceivedSpanAttributes: the provider hands each span over with the
// count and size of the attributes set on it, at the start and through
// SetAttributes (on the span Start returned, or found in the context),
// from several goroutines, and the last value of each watched key: what
// the span's own Attributes has, when no key is set twice.
func TestReceivedSpanAttributes(t *testing.T) {
	r := newReceiver("watched.a", "watched.b")
	tp, shutdown := receiving.NewProvider(r)
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	ctx, span := tp.Tracer("t").Start(t.Context(), "s", trace.WithSpanKind(trace.SpanKindServer))
	span.SetAttributes(attribute.String("first", "value"), attribute.Int("n", 7))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			trace.SpanFromContext(ctx).SetAttributes(attribute.String(fmt.Sprintf("from.goroutine.%d", i), strings.Repeat("x", i)))
		})
	}
	wg.Wait()
	span.SetAttributes(attribute.String("watched.a", "cause"), attribute.Bool("ok", true),
		attribute.KeyValue{}) // invalid: dropped by the SDK, not counted
	span.End()
	span.SetAttributes(attribute.String("after.end", "ignored")) // the span has ended
	require.Len(t, r.seen, 1)
	seen := r.seen[0]
	assert.True(t, seen.Counted)
	var wantBytes int64
	for _, kv := range seen.Span.Attributes() {
		wantBytes += int64(len(kv.Key))
		if kv.Value.Type() == attribute.STRING {
			wantBytes += int64(len(kv.Value.AsString()))
		}
	}
	assert.Len(t, seen.Span.Attributes(), 8)
	assert.Equal(t, 8, seen.AttrCount)
	assert.Equal(t, wantBytes, seen.AttrBytes)
	assert.False(t, seen.AttrOpaque)
	assert.Equal(t, "cause", seen.Watched[0])
	assert.Empty(t, seen.Watched[1], "never set")

	// A key set twice counts twice, with its last value watched (a string
	// only); a slice is opaque.
	_, again := tp.Tracer("t").Start(t.Context(), "again")
	again.SetAttributes(attribute.String("watched.a", "first"), attribute.String("watched.b", "a string"), attribute.Int("watched.b", 2))
	again.SetAttributes(attribute.String("watched.a", "last"), attribute.StringSlice("list", []string{"a", "b"}))
	again.End()
	require.Len(t, r.seen, 2)
	assert.Equal(t, 5, r.seen[1].AttrCount)
	assert.Equal(t, "last", r.seen[1].Watched[0])
	assert.Empty(t, r.seen[1].Watched[1], "last set to an integer")
	assert.True(t, r.seen[1].AttrOpaque)
	assert.True(t, r.seen[1].Counted, "started with no option")

	// A key with an empty value is an attribute the SDK keeps: counted,
	// and of a kind whose size is not counted.
	_, empty := tp.Tracer("t").Start(t.Context(), "empty")
	empty.SetAttributes(attribute.KeyValue{Key: "empty"})
	empty.End()
	require.Len(t, r.seen, 3)
	assert.Len(t, r.seen[2].Span.Attributes(), 1)
	assert.Equal(t, 1, r.seen[2].AttrCount)
	assert.True(t, r.seen[2].AttrOpaque)

	// Started with attributes, the span is not counted; with links or a
	// new root, it is.
	for _, c := range []struct {
		opt     trace.SpanStartOption
		counted bool
	}{
		{trace.WithAttributes(attribute.String("start", "value")), false},
		{trace.WithTimestamp(time.Now()), false}, // an option of events too
		{trace.WithLinks(trace.Link{SpanContext: span.SpanContext()}), true},
		{trace.WithNewRoot(), true},
	} {
		_, s := tp.Tracer("t").Start(t.Context(), "with options", trace.WithSpanKind(trace.SpanKindClient), c.opt)
		s.End()
		assert.Equal(t, c.counted, r.seen[len(r.seen)-1].Counted, "%T", c.opt)
	}
}

// TestReceivingProviderWatchLimit: a receiver may watch MaxWatched keys, no
// more.
func TestReceivingProviderWatchLimit(t *testing.T) {
	keys := make([]attribute.Key, receiving.MaxWatched+1)
	for i := range keys {
		keys[i] = attribute.Key(fmt.Sprint("k", i))
	}
	_, shutdown := receiving.NewProvider(newReceiver(keys[:receiving.MaxWatched]...))
	require.NoError(t, shutdown(context.Background()))
	assert.Panics(t, func() { receiving.NewProvider(newReceiver(keys...)) })
}
