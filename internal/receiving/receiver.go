// Package receiving hands the spans of an SDK tracer provider to a
// receiver itself as they end, without the SDK's read-only copy of each:
// the live page's trace ring keeps few of them in memory. internal/otelsetup
// makes such a provider for a fallback exporter that is a [SpanReceiver].
package receiving

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// SpanReceiver is a fallback exporter (see [WithFallbackExporter]) that,
// with [WithSyncFallback], takes each sampled span itself as it ends
// rather than a copy: the provider [TracerProvider] returns then has no
// span processor, so the SDK makes no read-only snapshot of each span
// (an allocation and a pass over its attributes, for every span, which a
// receiver that keeps few of them in memory does not need).
type SpanReceiver interface {
	sdktrace.SpanExporter
	// ReceiveSpan is called once with each sampled span of the provider,
	// on the goroutine that ends it, right after it ended. s.Span is the
	// SDK's own, which nothing changes any more; the receiver may keep
	// it, but not s, which is valid during the call only. It must not
	// block.
	ReceiveSpan(s *ReceivedSpan)
	// WatchedAttributes names the attribute keys, at most [MaxWatched],
	// whose string values ReceiveSpan wants in ReceivedSpan.Watched. It is
	// called once, by NewProvider.
	WatchedAttributes() []attribute.Key
}

// MaxWatched is the most attribute keys a [SpanReceiver] may watch.
const MaxWatched = 2

// ReceivedSpan is a span as it reaches a [SpanReceiver]: the SDK's span,
// and what the provider saw of its attributes as they were set through the
// span's SetAttributes, so that the receiver need not read them:
// ReadOnlySpan.Attributes makes the SDK de-duplicate them first, which
// builds a map for every span.
//
// The counts hold when Counted is true: when Start was given no
// attributes. Attributes given to Start, and those a sampler adds, are not
// seen. A key set more than once counts each time, and is in Watched
// with its last value, as Attributes would return it; limits that drop or
// cut attributes are not applied: the counts are at least what the span
// holds.
type ReceivedSpan struct {
	Span sdktrace.ReadOnlySpan
	// Counted says the span was started with no attributes (no
	// trace.WithAttributes), so that the provider saw every attribute set
	// on it but a sampler's; when false, read Span.Attributes instead of
	// the counts.
	Counted bool
	// AttrBytes is the length of the keys of the attributes set, and of
	// their values for strings.
	AttrBytes int64
	// AttrCount is the number of attributes set.
	AttrCount int
	// Watched holds, at the index of each key of the receiver's
	// WatchedAttributes, the last value set for it when that was a string
	// ("" when none was, or it was not a string).
	Watched [MaxWatched]string
	// AttrOpaque says an attribute of a kind whose length AttrBytes does
	// not count was set: a byte slice, a slice of strings, numbers or
	// booleans, a map, a slice of values.
	AttrOpaque bool
}

// count adds kvs to what r saw. Keys beyond watched are not looked for.
func (r *ReceivedSpan) count(watched []attribute.Key, kvs []attribute.KeyValue) {
	// Sums in locals, each attribute by index: a span's every attribute
	// comes through here.
	n, size, opaque := 0, int64(0), false
	for j := range kvs {
		kv := &kvs[j]
		if len(kv.Key) == 0 {
			continue // the SDK drops it (KeyValue.Valid)
		}
		n++
		size += int64(len(kv.Key))
		var str string
		switch kv.Value.Type() {
		case attribute.STRING:
			str = kv.Value.AsString()
			size += int64(len(str))
		case attribute.BOOL, attribute.INT64, attribute.FLOAT64:
		default:
			opaque = true
		}
		for i, k := range watched {
			if len(kv.Key) == len(k) && kv.Key == k {
				r.Watched[i] = str // "" when not a string
			}
		}
	}
	r.AttrCount += n
	r.AttrBytes += size
	r.AttrOpaque = r.AttrOpaque || opaque
}

// NewProvider returns an SDK tracer provider made with opts,
// which add no span processor, whose sampled spans reach recv itself as
// they end (see [SpanReceiver]), and the function that shuts the SDK
// provider, then recv, down. [TracerProvider] returns one for a
// SpanReceiver fallback with [WithSyncFallback].
//
// Its spans carry the SDK's spans inside: a span started as the child of
// one of them has the right parent, but the SDK's own child count of the
// parent (ReadOnlySpan.ChildSpanCount) stays 0.
//
// It panics if recv watches more than [MaxWatched] attribute keys.
func NewProvider(recv SpanReceiver, opts ...sdktrace.TracerProviderOption) (trace.TracerProvider, func(context.Context) error) {
	watched := recv.WatchedAttributes()
	if len(watched) > MaxWatched {
		panic(fmt.Sprintf("receiving: a SpanReceiver watches %d attribute keys, more than MaxWatched (%d)", len(watched), MaxWatched))
	}
	p := &receivingProvider{sdk: sdktrace.NewTracerProvider(opts...), recv: recv, watched: slices.Clone(watched)}
	return p, p.Shutdown
}

// receivingProvider is an SDK provider without span processors whose
// recorded, sampled spans reach recv as they end (see SpanReceiver).
type receivingProvider struct {
	embedded.TracerProvider
	sdk     *sdktrace.TracerProvider
	recv    SpanReceiver
	watched []attribute.Key // recv's
}

// noStartAttributes reports whether opts give a span no attributes: none
// of them is an option of events too, as trace.WithAttributes (and
// trace.WithTimestamp) are, unlike the span kind, links or a new root.
func noStartAttributes(opts []trace.SpanStartOption) bool {
	for _, o := range opts {
		if _, ok := o.(trace.EventOption); ok {
			return false
		}
	}
	return true
}

// Tracer returns the SDK's tracer of name, whose spans reach the receiver.
func (p *receivingProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return &receivingTracer{sdk: p.sdk.Tracer(name, opts...), provider: p}
}

// ForceFlush flushes the SDK provider: there is nothing queued for the
// receiver, which has each span as it ends.
func (p *receivingProvider) ForceFlush(ctx context.Context) error { return p.sdk.ForceFlush(ctx) }

// Shutdown shuts the SDK provider, then the receiver, down.
func (p *receivingProvider) Shutdown(ctx context.Context) error {
	err := p.sdk.Shutdown(ctx)
	if rerr := p.recv.Shutdown(ctx); err == nil {
		err = rerr
	}
	return err
}

type receivingTracer struct {
	embedded.Tracer
	sdk      trace.Tracer
	provider *receivingProvider
}

// Start starts an SDK span; a recorded, sampled one comes back wrapped,
// in the context too, so that ending it hands it to the receiver.
//
// Its frame stands over the SDK's Start, on a request's deepest path
// (docs/limits.md, "The request's stack"): the wrapping is in a call of
// its own.
func (t *receivingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, s := t.sdk.Start(ctx, name, opts...)
	return t.wrap(ctx, s, opts)
}

// wrap returns s, started in ctx with opts, wrapped with ctx if it is a
// recorded, sampled SDK span, else as it is.
//
//go:noinline
func (t *receivingTracer) wrap(ctx context.Context, s trace.Span, opts []trace.SpanStartOption) (context.Context, trace.Span) {
	if _, ok := s.(sdktrace.ReadOnlySpan); !ok || !s.IsRecording() || !s.SpanContext().IsSampled() {
		return ctx, s
	}
	rs := &receivedSpan{Span: s, provider: t.provider, ctx: ctx}
	rs.seen.Counted = noStartAttributes(opts)
	return (*spanContext)(rs), rs
}

// receivedSpan is an SDK span that reaches the receiver when it ends.
// Seen as a spanContext, it is also the context Start returns.
type receivedSpan struct {
	trace.Span // the SDK's, a sdktrace.ReadOnlySpan too (see Start)
	provider   *receivingProvider
	ctx        context.Context // the SDK's, which carries the SDK's span
	ended      atomic.Bool

	mu   sync.Mutex   // guards seen: a span may be written from several goroutines
	seen ReceivedSpan // its attributes as they were set (seen.Span is set at End)
}

// SetAttributes counts kvs for the receiver, then sets them on the SDK's
// span. Counted first, an attribute the SDK takes is counted before End
// hands the span over, even from another goroutine racing End; one set
// after End is counted and dropped: the counts are never below the span's.
func (s *receivedSpan) SetAttributes(kvs ...attribute.KeyValue) {
	s.mu.Lock()
	s.seen.count(s.provider.watched, kvs)
	s.mu.Unlock()
	s.Span.SetAttributes(kvs...)
}

// spanContext is a receivedSpan as the context of its span: the SDK's
// context, in which the SDK's span reads as the receivedSpan, so that
// trace.SpanFromContext finds the span that reports its end. It spares a
// context.WithValue (an allocation) on top of the SDK's context.
type spanContext receivedSpan

func (c *spanContext) Deadline() (time.Time, bool) { return c.ctx.Deadline() }
func (c *spanContext) Done() <-chan struct{}       { return c.ctx.Done() }
func (c *spanContext) Err() error                  { return c.ctx.Err() }

// Value returns the receivedSpan where the SDK's context has its span
// (under the trace package's key), and the SDK context's value otherwise.
// The comparison cannot panic: the SDK span's dynamic type is a pointer.
func (c *spanContext) Value(key any) any {
	v := c.ctx.Value(key)
	if v == any(c.Span) {
		return (*receivedSpan)(c)
	}
	return v
}

// End ends the span and, the first time, hands it to the receiver. A
// panic under way (End deferred) is recorded as an exception event and
// goes on, as the SDK's End records it when it is deferred itself.
func (s *receivedSpan) End(opts ...trace.SpanEndOption) {
	if v := recover(); v != nil {
		defer panic(v)
		s.AddEvent(semconv.ExceptionEventName, trace.WithAttributes(
			semconv.ExceptionType(typeName(v)),
			semconv.ExceptionMessage(fmt.Sprint(v)),
		))
	}
	s.Span.End(opts...)
	if s.ended.CompareAndSwap(false, true) {
		s.mu.Lock() // a late SetAttributes on another goroutine changes nothing any more
		s.seen.Span = s.Span.(sdktrace.ReadOnlySpan)
		s.provider.recv.ReceiveSpan(&s.seen)
		s.mu.Unlock()
	}
}

// TracerProvider returns the receiving provider, so that spans started
// from this one reach the receiver too.
func (s *receivedSpan) TracerProvider() trace.TracerProvider { return s.provider }

// typeName names v's type for an exception event: the package path and
// the name, or the type's string for a predeclared or unnamed type ("string"
// where the SDK's own End writes ".string").
func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t.PkgPath() == "" {
		return t.String() // a predeclared or unnamed type
	}
	return t.PkgPath() + "." + t.Name()
}
