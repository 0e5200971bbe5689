package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// -trace-client-context: link by default for authenticated clients of a
// public listener, trust otherwise; the flag says otherwise either way.
func TestTraceClientContextDefault(t *testing.T) {
	const issuer = "-auth-issuer=https://as.example"
	const resource = "-auth-resource=https://mcp.example/mcp"
	for _, tc := range []struct {
		args []string
		link bool
	}{
		{args: nil, link: false},
		{args: []string{"-http=0.0.0.0:8080", "-allow-unauthenticated", "-allowed-hosts=mcp.example", "-admin-http=127.0.0.1:9090"}, link: false},
		{args: []string{issuer, "-http=127.0.0.1:8080"}, link: false},
		{args: []string{issuer, resource, "-http=0.0.0.0:8080", "-admin-http=127.0.0.1:9090"}, link: true},
		{args: []string{issuer, resource, "-http=192.0.2.7:8080", "-admin-http=127.0.0.1:9090"}, link: true},
		{args: []string{issuer, resource, "-http=0.0.0.0:8080", "-admin-http=127.0.0.1:9090", "-trace-client-context=trust"}, link: false},
		{args: []string{"-trace-client-context=link"}, link: true},
		{args: []string{issuer, "-stdio"}, link: false},
	} {
		cfg, err := parseConfig(tc.args, func(string) string { return "" }, io.Discard)
		require.NoError(t, err, "%q", tc.args)
		assert.Equal(t, tc.link, cfg.untrustedTraceContext(), "%q", tc.args)
	}
	env := map[string]string{"VIGIL_TRACE_CLIENT_CONTEXT": "link"}
	cfg, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	require.NoError(t, err)
	assert.True(t, cfg.untrustedTraceContext())
	_, err = parseConfig([]string{"-trace-client-context=maybe"}, func(string) string { return "" }, io.Discard)
	require.ErrorContains(t, err, "want trust or link")
}

// vigil's chain follows the mode: with link, a client's traceparent is a
// link of a span in a trace of the server's; with trust, its parent.
func TestTraceClientContextWiring(t *testing.T) {
	client := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled, Remote: true,
	})
	traceparent := "00-" + client.TraceID().String() + "-" + client.SpanID().String() + "-01"
	for _, mode := range []string{"trust", "link"} {
		t.Run(mode, func(t *testing.T) {
			cfg, err := parseConfig([]string{"-trace-client-context=" + mode}, func(string) string { return "" }, io.Discard)
			require.NoError(t, err)
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			svc, err := newService(cfg, newLogger(cfg, io.Discard), prometheus.NewRegistry(), debugpage.NewRecorder(), nil, vigil.WithTracerProvider(tp))
			require.NoError(t, err)
			defer func() { _ = svc.Shutdown(context.Background()) }()
			srv, inst := svc.Server, svc.Instrumentation
			ctx := t.Context()
			peer, conn := memory.NewPair()
			served := make(chan error, 1)
			go func() { served <- inst.ConnServer(srv, telemetry.TransportMemory).Serve(ctx, conn) }()
			call := func(id int64, method string, params any) {
				p, err := json.Marshal(params)
				require.NoError(t, err)
				require.NoError(t, peer.Write(ctx, &transport.Request{ID: transport.Int64ID(id), Method: method, Params: p}))
				m, err := peer.Read(ctx)
				require.NoError(t, err)
				resp, ok := m.(*transport.Response)
				require.True(t, ok, "%T", m)
				require.Nil(t, resp.Error)
			}
			call(0, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
			require.NoError(t, peer.Write(ctx, &transport.Request{Method: "notifications/initialized"}))
			call(1, "ping", map[string]any{"_meta": map[string]any{"traceparent": traceparent}})
			require.NoError(t, peer.Close())
			if err := <-served; !errors.Is(err, server.ErrServerClosed) {
				require.NoError(t, err)
			}
			_, err = svc.Registry.Gather() // the collector records the outcomes that wait first
			require.NoError(t, err)
			require.NoError(t, tp.ForceFlush(ctx))

			var ping sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "ping" {
					ping = s
				}
			}
			require.NotNil(t, ping, "the ping's span")
			if mode == "trust" {
				assert.Equal(t, client.SpanID(), ping.Parent().SpanID())
				assert.Equal(t, client.TraceID(), ping.SpanContext().TraceID())
				assert.Empty(t, ping.Links())
				return
			}
			assert.False(t, ping.Parent().IsValid(), "a root")
			assert.NotEqual(t, client.TraceID(), ping.SpanContext().TraceID())
			require.Len(t, ping.Links(), 1)
			assert.Equal(t, client.SpanID(), ping.Links()[0].SpanContext.SpanID())
		})
	}
}
