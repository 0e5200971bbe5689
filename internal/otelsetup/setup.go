package otelsetup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/vigil-mcp/vigil/internal/receiving"
)

// Option configures [TracerProvider], [SpanExporter] and [ExportMetrics];
// a nil Option is ignored.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	serviceName    string
	serviceVersion string
	fallback       func(context.Context) (sdktrace.SpanExporter, error)
	fallbackSync   bool // the fallback exporter takes each span as it ends (WithSyncFallback)
	console        io.Writer
	producers      []sdkmetric.Producer
	grpc           *GRPCExporters // WithGRPC; nil: OTLP over gRPC is an error
}

// GRPCExporters build OTLP exporters over gRPC, for [WithGRPC].
type GRPCExporters struct {
	Spans   func(context.Context) (sdktrace.SpanExporter, error)
	Metrics func(context.Context) (sdkmetric.Exporter, error)
}

// WithGRPC lets OTEL_EXPORTER_OTLP_PROTOCOL=grpc (or its per-signal
// variable) choose OTLP over gRPC, with the exporters e builds: the
// package links no gRPC itself, so that a program that does not ask for
// it (vigil.WithOTLPGRPC with OpenTelemetry's exporters) does not link it.
// Without it, grpc is an error that says how to ask for it.
func WithGRPC(e GRPCExporters) Option {
	return optionFunc(func(c *config) { c.grpc = &e })
}

// errNoGRPC is the error of OTLP over gRPC asked for by variable without
// WithGRPC.
func errNoGRPC(variable string) error {
	return fmt.Errorf("otelsetup: %s=grpc: this program does not link OTLP over gRPC; "+
		"give vigil.New the option vigil.WithOTLPGRPC(otlptracegrpc.New, otlpmetricgrpc.New) (OpenTelemetry's exporters), "+
		"or use http/protobuf (the default)", variable)
}

// otlpProtocol returns the OTLP protocol of signal ("TRACES" or
// "METRICS"): its own variable, else the shared one, else http/protobuf,
// with the variable that said so.
func otlpProtocol(signal string) (proto, variable string, err error) {
	variable = "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	proto = strings.TrimSpace(os.Getenv(variable))
	if proto == "" {
		variable = "OTEL_EXPORTER_OTLP_PROTOCOL"
		proto = strings.TrimSpace(os.Getenv(variable))
	}
	switch proto {
	case "":
		return "http/protobuf", variable, nil
	case "http/protobuf", "grpc":
		return proto, variable, nil
	}
	return "", variable, fmt.Errorf("otelsetup: OTLP protocol %q is not supported (want http/protobuf or grpc)", proto)
}

// WithService sets service.name and service.version of the resource.
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override them. Without it
// the name is the SDK's default ("unknown_service:" and the executable).
func WithService(name, version string) Option {
	return optionFunc(func(c *config) { c.serviceName, c.serviceVersion = name, version })
}

// WithFallbackExporter sets the exporter used when the environment names
// none: OTEL_TRACES_EXPORTER is unset and no OTLP endpoint is configured
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). cmd/
// uses it to keep recent spans in memory. A factory that returns a nil
// exporter and no error means "none". Without it, that case means OTLP to
// the default endpoint, as the OTel specification says.
func WithFallbackExporter(f func(context.Context) (sdktrace.SpanExporter, error)) Option {
	return optionFunc(func(c *config) { c.fallback = f })
}

// WithSyncFallback hands the fallback exporter of [WithFallbackExporter]
// each span as it ends, on the goroutine that ends it
// (sdktrace.WithSyncer), instead of batching spans for it on a goroutine of
// its own (sdktrace.WithBatcher, as every other exporter gets). For an
// exporter that keeps spans in memory and does no I/O, such as cmd/vigil's
// trace ring, that spares a queue, a goroutine and its wake-ups; an
// exporter that blocks would hold up every request that ends a span. A
// fallback exporter that is a receiving.SpanReceiver (package internal/receiving) gets each sampled span itself
// through ReceiveSpan, from a provider with no span processor, and so no
// per-span snapshot.
func WithSyncFallback() Option {
	return optionFunc(func(c *config) { c.fallbackSync = true })
}

// WithConsoleWriter sets where OTEL_TRACES_EXPORTER=console writes spans
// (and OTEL_METRICS_EXPORTER=console metrics).
// The default is standard error, not standard output, because a stdio MCP
// server's standard output carries the protocol. nil keeps the default.
func WithConsoleWriter(w io.Writer) Option {
	return optionFunc(func(c *config) { c.console = w })
}

func newConfig(opts []Option) config {
	c := config{console: os.Stderr}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.console == nil {
		c.console = os.Stderr
	}
	return c
}

// TracerProvider builds a tracer provider from the standard OTEL_*
// environment and returns it with a shutdown function that flushes the
// spans still buffered and stops the exporter; call it once, with a
// deadline, before the process exits. OTEL_TRACES_EXPORTER chooses the
// exporter, otlp by default (the package doc lists the values), and
// without an OTLP endpoint the fallback exporter of
// [WithFallbackExporter], if given. The sampler comes from
// OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (parentbased_always_on by
// default); the resource carries service.name and service.version (see
// [WithService]), then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES,
// which win; spans are exported in batches (OTEL_BSP_* tune it). It
// installs neither the provider as the global one nor a propagator: that
// is cmd/'s choice, or pass the provider to the middleware.
func TracerProvider(ctx context.Context, opts ...Option) (trace.TracerProvider, func(context.Context) error, error) {
	cfg := newConfig(opts)
	noShutdown := func(context.Context) error { return nil }
	if disabled, _ := strconv.ParseBool(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED"))); disabled {
		return noop.NewTracerProvider(), noShutdown, nil
	}
	exp, fallback, err := spanExporter(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if exp == nil {
		return noop.NewTracerProvider(), noShutdown, nil
	}
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, nil, errors.Join(err, exp.Shutdown(ctx))
	}
	recv, receives := exp.(receiving.SpanReceiver)
	if fallback && cfg.fallbackSync && receives {
		// No span processor: each span reaches recv itself as it ends.
		tp, shutdown := receiving.NewProvider(recv, sdktrace.WithResource(res))
		return tp, shutdown, nil
	}
	var processor sdktrace.TracerProviderOption
	switch {
	case fallback && cfg.fallbackSync:
		processor = sdktrace.WithSyncer(exp)
	default:
		processor = sdktrace.WithBatcher(exp) // which starts its goroutine
	}
	tp := sdktrace.NewTracerProvider(processor, sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// SpanExporter returns the span exporter the environment selects, as
// [TracerProvider] does, for callers that build their own provider. It
// returns a nil exporter and no error for "none" (and for a fallback that
// returns nil). The caller shuts the exporter down.
func SpanExporter(ctx context.Context, opts ...Option) (sdktrace.SpanExporter, error) {
	exp, _, err := spanExporter(ctx, newConfig(opts))
	return exp, err
}

// spanExporter returns the exporter the environment selects, and whether
// it is the fallback.
func spanExporter(ctx context.Context, cfg config) (_ sdktrace.SpanExporter, fallback bool, _ error) {
	name := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))
	switch name {
	case "none":
		return nil, false, nil
	case "console":
		// The console exporter writes to standard output by default,
		// which a stdio server must keep for the protocol.
		exp, err := stdouttrace.New(stdouttrace.WithWriter(cfg.console))
		if err != nil {
			return nil, false, fmt.Errorf("otelsetup: console exporter: %w", err)
		}
		return exp, false, nil
	case "":
		if cfg.fallback != nil && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			exp, err := cfg.fallback(ctx)
			if err != nil {
				return nil, true, fmt.Errorf("otelsetup: fallback exporter: %w", err)
			}
			return exp, true, nil
		}
		name = "otlp"
	}
	if name != "otlp" {
		return nil, false, fmt.Errorf("otelsetup: OTEL_TRACES_EXPORTER=%q is not supported (want otlp, console or none)", name)
	}
	proto, variable, err := otlpProtocol("TRACES")
	if err != nil {
		return nil, false, err
	}
	var exp sdktrace.SpanExporter
	switch {
	case proto == "http/protobuf":
		exp, err = newOTLPHTTPSpanExporter(ctx)
	case cfg.grpc == nil || cfg.grpc.Spans == nil:
		return nil, false, errNoGRPC(variable)
	default:
		exp, err = cfg.grpc.Spans(ctx)
	}
	if err != nil {
		return nil, false, fmt.Errorf("otelsetup: OTLP span exporter: %w", err)
	}
	return exp, false, nil
}

func newResource(ctx context.Context, cfg config) (*resource.Resource, error) {
	opts := []resource.Option{resource.WithTelemetrySDK(), resource.WithService()}
	if cfg.serviceName != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceName(cfg.serviceName)))
	}
	if cfg.serviceVersion != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceVersion(cfg.serviceVersion)))
	}
	// Later detectors win: the environment overrides the defaults above.
	opts = append(opts, resource.WithFromEnv())
	res, err := resource.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otelsetup: resource: %w", err)
	}
	return res, nil
}
