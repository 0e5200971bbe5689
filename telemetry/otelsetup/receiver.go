package otelsetup

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

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
	// on the goroutine that ends it, right after it ended. The span is
	// the SDK's own, which nothing changes any more; the receiver may
	// keep it. It must not block.
	ReceiveSpan(sdktrace.ReadOnlySpan)
}

// NewReceivingProvider returns an SDK tracer provider made with opts,
// which add no span processor, whose sampled spans reach recv itself as
// they end (see [SpanReceiver]), and the function that shuts the SDK
// provider, then recv, down. [TracerProvider] returns one for a
// SpanReceiver fallback with [WithSyncFallback].
//
// Its spans carry the SDK's spans inside: a span started as the child of
// one of them has the right parent, but the SDK's own child count of the
// parent (ReadOnlySpan.ChildSpanCount) stays 0.
func NewReceivingProvider(recv SpanReceiver, opts ...sdktrace.TracerProviderOption) (trace.TracerProvider, func(context.Context) error) {
	p := &receivingProvider{sdk: sdktrace.NewTracerProvider(opts...), recv: recv}
	return p, p.Shutdown
}

// receivingProvider is an SDK provider without span processors whose
// recorded, sampled spans reach recv as they end (see SpanReceiver).
type receivingProvider struct {
	embedded.TracerProvider
	sdk  *sdktrace.TracerProvider
	recv SpanReceiver
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
func (t *receivingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, s := t.sdk.Start(ctx, name, opts...)
	if _, ok := s.(sdktrace.ReadOnlySpan); !ok || !s.IsRecording() || !s.SpanContext().IsSampled() {
		return ctx, s
	}
	rs := &receivedSpan{Span: s, provider: t.provider, ctx: ctx}
	return (*spanContext)(rs), rs
}

// receivedSpan is an SDK span that reaches the receiver when it ends.
// Seen as a spanContext, it is also the context Start returns.
type receivedSpan struct {
	trace.Span // the SDK's, a sdktrace.ReadOnlySpan too (see Start)
	provider   *receivingProvider
	ctx        context.Context // the SDK's, which carries the SDK's span
	ended      atomic.Bool
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
		s.Span.AddEvent(semconv.ExceptionEventName, trace.WithAttributes(
			semconv.ExceptionType(typeName(v)),
			semconv.ExceptionMessage(fmt.Sprint(v)),
		))
	}
	s.Span.End(opts...)
	if s.ended.CompareAndSwap(false, true) {
		s.provider.recv.ReceiveSpan(s.Span.(sdktrace.ReadOnlySpan))
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
