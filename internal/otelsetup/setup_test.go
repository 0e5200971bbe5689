package otelsetup_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/vigil-mcp/vigil/internal/otelsetup"
)

// otelEnv is every variable the tests touch; each test starts with all of
// them empty, whatever the process environment holds.
var otelEnv = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_TIMEOUT",
	"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
	"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_KEY",
}

func setEnv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range otelEnv {
		t.Setenv(k, env[k])
	}
}

// keptExporter is an in-memory exporter whose Shutdown keeps the spans
// (tracetest.InMemoryExporter's forgets them).
type keptExporter struct{ *tracetest.InMemoryExporter }

func (keptExporter) Shutdown(context.Context) error { return nil }

func newKept() keptExporter { return keptExporter{tracetest.NewInMemoryExporter()} }

func TestSpanExporter(t *testing.T) {
	fallback := newKept()
	tests := []struct {
		name    string
		env     map[string]string
		want    any  // exporter type; nil for none
		grpc    bool // given WithGRPC
		wantErr string
	}{
		{name: "none", env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}},
		{name: "console", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, want: &stdouttrace.Exporter{}},
		{name: "unset uses the fallback", env: nil, want: keptExporter{}},
		{name: "unset with an endpoint is otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, want: &otlptrace.Exporter{}},
		{name: "unset with a traces endpoint is otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, want: &otlptrace.Exporter{}},
		{name: "otlp over http", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, want: &otlptrace.Exporter{}},
		{name: "otlp over grpc, asked for", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, grpc: true, want: &otlptrace.Exporter{}},
		{name: "otlp over grpc, not linked", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: `otelsetup: OTEL_EXPORTER_OTLP_PROTOCOL=grpc: this program does not link OTLP over gRPC; give vigil.New the option vigil.WithOTLPGRPC(otlptracegrpc.New, otlpmetricgrpc.New)`},
		{name: "otlp traces protocol wins", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "bogus", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, grpc: true, want: &otlptrace.Exporter{}},
		{name: "otlp traces protocol names itself", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, wantErr: `otelsetup: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc: `},
		{name: "otlp bad endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "127.0.0.1:4318"}, wantErr: `the OTLP traces endpoint "127.0.0.1:4318" is not an http or https URL`},
		{name: "otlp bad protocol", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: `otelsetup: OTLP protocol "http/json" is not supported (want http/protobuf or grpc)`},
		{name: "unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: `otelsetup: OTEL_TRACES_EXPORTER="zipkin" is not supported (want otlp, console or none)`},
		{name: "list", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp,console"}, wantErr: `otelsetup: OTEL_TRACES_EXPORTER="otlp,console" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.env)
			var grpc otelsetup.Option
			if tt.grpc {
				grpc = otelsetup.WithGRPC(grpcExporters)
			}
			exp, err := otelsetup.SpanExporter(t.Context(), grpc, otelsetup.WithFallbackExporter(func(context.Context) (sdktrace.SpanExporter, error) {
				return fallback, nil
			}))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.Nil(t, exp)
				return
			}
			require.NoError(t, err)
			if tt.want == nil {
				assert.Nil(t, exp)
				return
			}
			require.IsType(t, tt.want, exp)
			require.NoError(t, exp.Shutdown(t.Context()))
		})
	}
}

// grpcExporters are the gRPC exporters, as vigil.WithOTLPGRPC
// builds them from OpenTelemetry's constructors.
var grpcExporters = otelsetup.GRPCExporters{
	Spans:   func(ctx context.Context) (sdktrace.SpanExporter, error) { return otlptracegrpc.New(ctx) },
	Metrics: func(ctx context.Context) (sdkmetric.Exporter, error) { return otlpmetricgrpc.New(ctx) },
}

func TestSpanExporterNoFallbackIsOTLP(t *testing.T) {
	setEnv(t, nil)
	exp, err := otelsetup.SpanExporter(t.Context())
	require.NoError(t, err)
	require.IsType(t, &otlptrace.Exporter{}, exp)
	require.NoError(t, exp.Shutdown(t.Context()))
}

func TestTracerProviderNoop(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		fallback sdktrace.SpanExporter
	}{
		{name: "exporter none", env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}},
		{name: "sdk disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}},
		{name: "nil fallback", fallback: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.env)
			tp, shutdown, err := otelsetup.TracerProvider(t.Context(), otelsetup.WithFallbackExporter(func(context.Context) (sdktrace.SpanExporter, error) {
				return tt.fallback, nil
			}))
			require.NoError(t, err)
			assert.IsType(t, noop.TracerProvider{}, tp)
			_, span := tp.Tracer("t").Start(t.Context(), "s")
			assert.False(t, span.IsRecording())
			span.End()
			assert.NoError(t, shutdown(t.Context()))
		})
	}
}

func TestTracerProviderFallbackError(t *testing.T) {
	setEnv(t, nil)
	boom := errors.New("boom")
	tp, shutdown, err := otelsetup.TracerProvider(t.Context(), otelsetup.WithFallbackExporter(func(context.Context) (sdktrace.SpanExporter, error) {
		return nil, boom
	}))
	require.ErrorIs(t, err, boom)
	assert.Nil(t, tp)
	assert.Nil(t, shutdown)
}

// resourceAttrs returns a span's resource attributes as strings.
func resourceAttrs(r *resource.Resource) map[string]string {
	out := map[string]string{}
	for _, kv := range r.Attributes() {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

func TestTracerProviderResourceAndFlush(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want map[string]string
	}{
		{
			name: "options",
			want: map[string]string{"service.name": "vigil-test", "service.version": "1.2.3"},
		},
		{
			name: "environment wins",
			env: map[string]string{
				"OTEL_SERVICE_NAME":        "from-env",
				"OTEL_RESOURCE_ATTRIBUTES": "service.version=9.9.9,deployment.environment.name=test",
			},
			want: map[string]string{"service.name": "from-env", "service.version": "9.9.9", "deployment.environment.name": "test"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.env)
			exp := newKept()
			tp, shutdown, err := otelsetup.TracerProvider(t.Context(),
				otelsetup.WithService("vigil-test", "1.2.3"),
				otelsetup.WithFallbackExporter(func(context.Context) (sdktrace.SpanExporter, error) { return exp, nil }))
			require.NoError(t, err)
			_, span := tp.Tracer("t").Start(t.Context(), "work")
			span.End()
			assert.Empty(t, exp.GetSpans(), "batched, not exported at once")
			require.NoError(t, shutdown(t.Context()))
			spans := exp.GetSpans()
			require.Len(t, spans, 1, "shutdown flushes")
			assert.Equal(t, "work", spans[0].Name)
			got := resourceAttrs(spans[0].Resource)
			for k, v := range tt.want {
				assert.Equal(t, v, got[k], k)
			}
			assert.Equal(t, "opentelemetry", got["telemetry.sdk.name"])
			assert.NotEmpty(t, got["service.instance.id"])
		})
	}
}

func TestTracerProviderSampler(t *testing.T) {
	tests := []struct {
		name      string
		sampler   string
		arg       string
		recording bool
	}{
		{name: "default samples", recording: true},
		{name: "always_off", sampler: "always_off", recording: false},
		{name: "traceidratio 0", sampler: "traceidratio", arg: "0", recording: false},
		{name: "parentbased_always_on", sampler: "parentbased_always_on", recording: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, map[string]string{"OTEL_TRACES_SAMPLER": tt.sampler, "OTEL_TRACES_SAMPLER_ARG": tt.arg})
			exp := newKept()
			tp, shutdown, err := otelsetup.TracerProvider(t.Context(),
				otelsetup.WithFallbackExporter(func(context.Context) (sdktrace.SpanExporter, error) { return exp, nil }))
			require.NoError(t, err)
			_, span := tp.Tracer("t").Start(t.Context(), "work")
			assert.Equal(t, tt.recording, span.IsRecording())
			span.End()
			require.NoError(t, shutdown(t.Context()))
			if tt.recording {
				assert.Len(t, exp.GetSpans(), 1)
			} else {
				assert.Empty(t, exp.GetSpans())
			}
		})
	}
}

func TestTracerProviderConsoleWriter(t *testing.T) {
	setEnv(t, map[string]string{"OTEL_TRACES_EXPORTER": "console"})
	var buf bytes.Buffer
	tp, shutdown, err := otelsetup.TracerProvider(t.Context(),
		otelsetup.WithService("vigil-console", "0.1.0"), otelsetup.WithConsoleWriter(&buf))
	require.NoError(t, err)
	_, span := tp.Tracer("t").Start(t.Context(), "tools/call echo")
	span.End()
	require.NoError(t, shutdown(t.Context()))

	var got struct {
		Name     string
		Resource []struct {
			Key   string
			Value struct{ Value any }
		}
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &got), buf.String())
	assert.Equal(t, "tools/call echo", got.Name)
	res := map[string]any{}
	for _, kv := range got.Resource {
		res[kv.Key] = kv.Value.Value
	}
	assert.Equal(t, "vigil-console", res["service.name"])
	assert.Equal(t, "0.1.0", res["service.version"])
}

func TestTracerProviderBadResource(t *testing.T) {
	setEnv(t, map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "not-a-pair"})
	exp := newKept()
	tp, shutdown, err := otelsetup.TracerProvider(t.Context(),
		otelsetup.WithFallbackExporter(func(context.Context) (sdktrace.SpanExporter, error) { return exp, nil }))
	require.ErrorContains(t, err, "otelsetup: resource: ")
	assert.Nil(t, tp)
	assert.Nil(t, shutdown)
}

// TestTracerProviderSyncFallback: with WithSyncFallback the fallback
// exporter has a span as soon as it ends, before any flush; an exporter
// the environment selects is still batched.
func TestTracerProviderSyncFallback(t *testing.T) {
	setEnv(t, nil)
	exp := newKept()
	tp, shutdown, err := otelsetup.TracerProvider(t.Context(), otelsetup.WithSyncFallback(),
		otelsetup.WithFallbackExporter(func(context.Context) (sdktrace.SpanExporter, error) { return exp, nil }))
	require.NoError(t, err)
	_, span := tp.Tracer("t").Start(t.Context(), "work")
	span.End()
	spans := exp.GetSpans()
	require.Len(t, spans, 1, "exported as it ended")
	assert.Equal(t, "work", spans[0].Name)
	require.NoError(t, shutdown(t.Context()))

	setEnv(t, map[string]string{"OTEL_TRACES_EXPORTER": "console"})
	var out bytes.Buffer
	tp, shutdown, err = otelsetup.TracerProvider(t.Context(), otelsetup.WithSyncFallback(), otelsetup.WithConsoleWriter(&out),
		otelsetup.WithFallbackExporter(func(context.Context) (sdktrace.SpanExporter, error) { return exp, nil }))
	require.NoError(t, err)
	_, span = tp.Tracer("t").Start(t.Context(), "batched")
	span.End()
	assert.Empty(t, out.String(), "the console exporter is batched")
	require.NoError(t, shutdown(t.Context()))
	assert.Contains(t, out.String(), `"batched"`)
}
