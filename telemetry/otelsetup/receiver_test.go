package otelsetup_test

import (
	"context"
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/telemetry/otelsetup"
)

// receiver is a SpanReceiver that keeps what reaches it each way.
type receiver struct {
	keptExporter
	mu       sync.Mutex
	received []sdktrace.ReadOnlySpan
	shutdown int
}

func newReceiver() *receiver { return &receiver{keptExporter: newKept()} }

func (r *receiver) ReceiveSpan(s sdktrace.ReadOnlySpan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.received = append(r.received, s)
}

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
			tp, shutdown := otelsetup.NewReceivingProvider(r, sdktrace.WithSampler(sampler))
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
	tp, shutdown := otelsetup.NewReceivingProvider(r)
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
		attrs[string(kv.Key)] = kv.Value.Emit()
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
// no more allocations, and fewer bytes, than one of a provider with a span
// processor, which the SDK snapshots when it ends; that is what the
// receiver is for.
func TestReceivingProviderAllocatesLess(t *testing.T) {
	r := newReceiver()
	recv, shutdown := otelsetup.NewReceivingProvider(r)
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	proc := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(nopProcessor{}))
	t.Cleanup(func() { require.NoError(t, proc.Shutdown(context.Background())) })
	attrs := trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.tool.name", "echo"), attribute.String("jsonrpc.request.id", "1"))
	perSpan := func(tp trace.TracerProvider) (allocs, bytes float64) {
		const runs = 2000
		tracer := tp.Tracer("t")
		ctx := context.Background()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			_, span := tracer.Start(ctx, "s", attrs)
			span.End()
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / runs, float64(after.TotalAlloc-before.TotalAlloc) / runs
	}
	recvAllocs, recvBytes := perSpan(recv)
	procAllocs, procBytes := perSpan(proc)
	t.Logf("per span: receiver %v allocations, %v bytes; processor %v allocations, %v bytes", recvAllocs, recvBytes, procAllocs, procBytes)
	assert.LessOrEqual(t, math.Round(recvAllocs), math.Round(procAllocs))
	assert.Less(t, recvBytes, procBytes-128, "the snapshot, at least, is spared")
}
