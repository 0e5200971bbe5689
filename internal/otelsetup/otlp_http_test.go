package otelsetup_test

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/vigil-mcp/vigil/internal/otelsetup"
)

// TestTracerProviderOTLPHTTP: spans reach an OTLP/HTTP collector as an
// ExportTraceServiceRequest at /v1/traces, protobuf-encoded, gzipped when
// OTEL_EXPORTER_OTLP_COMPRESSION says so, with the headers of
// OTEL_EXPORTER_OTLP_HEADERS (URL-decoded) and the resource, as the
// OpenTelemetry exporter sends them, without linking gRPC.
func TestTracerProviderOTLPHTTP(t *testing.T) {
	var (
		mu      sync.Mutex
		reqs    []*coltracepb.ExportTraceServiceRequest
		headers []http.Header
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(b, req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		reqs, headers = append(reqs, req), append(headers, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	setEnv(t, map[string]string{
		"OTEL_TRACES_EXPORTER":           "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT":    srv.URL + "/",
		"OTEL_EXPORTER_OTLP_HEADERS":     "Authorization=Bearer%20abc, X-Tenant=t1",
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
	})
	tp, shutdown, err := otelsetup.TracerProvider(t.Context(), otelsetup.WithService("svc", "1.2.3"))
	require.NoError(t, err)
	_, span := tp.Tracer("test").Start(t.Context(), "tools/call forecast")
	span.End()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, shutdown(ctx))

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, reqs, 1, "one export, at shutdown")
	assert.Equal(t, "application/x-protobuf", headers[0].Get("Content-Type"))
	assert.Equal(t, "Bearer abc", headers[0].Get("Authorization"))
	assert.Equal(t, "t1", headers[0].Get("X-Tenant"))
	rs := reqs[0].GetResourceSpans()
	require.Len(t, rs, 1)
	attrs := map[string]string{}
	for _, kv := range rs[0].GetResource().GetAttributes() {
		attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	assert.Equal(t, "svc", attrs["service.name"])
	assert.Equal(t, "1.2.3", attrs["service.version"])
	require.Len(t, rs[0].GetScopeSpans(), 1)
	spans := rs[0].GetScopeSpans()[0].GetSpans()
	require.Len(t, spans, 1)
	assert.Equal(t, "tools/call forecast", spans[0].GetName())
	assert.Len(t, spans[0].GetTraceId(), 16)
}

// TestOTLPHTTPBadSettings: each OTEL_EXPORTER_OTLP_* value the exporter
// cannot use is an error naming the variable.
func TestOTLPHTTPBadSettings(t *testing.T) {
	for name, tc := range map[string]struct{ env map[string]string }{
		"OTEL_EXPORTER_OTLP_TIMEOUT":        {map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}},
		"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": {map[string]string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "-1"}},
		"OTEL_EXPORTER_OTLP_COMPRESSION":    {map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}},
		"OTEL_EXPORTER_OTLP_HEADERS":        {map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}},
		"OTEL_EXPORTER_OTLP_CERTIFICATE":    {map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}},
		"OTEL_EXPORTER_OTLP_CLIENT_KEY":     {map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/nonexistent/c.pem"}},
	} {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}
			for k, v := range tc.env {
				env[k] = v
			}
			setEnv(t, env)
			exp, err := otelsetup.SpanExporter(t.Context())
			require.ErrorContains(t, err, name)
			assert.Nil(t, exp)
		})
	}
}
