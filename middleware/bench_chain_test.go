package middleware_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// BenchmarkChain measures what each middleware adds to one tools/call
// round trip over the memory transport (no HTTP), one call at a time: the
// cost of the instrumentation by itself, where BenchmarkHTTPEcho* measures
// it against a whole HTTP request.
//
//	go test -run '^$' -bench Chain -count=3 ./middleware/
func BenchmarkChain(b *testing.B) {
	newTP := func(b *testing.B) *sdktrace.TracerProvider {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(&discardExporter{}))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		return tp
	}
	newMetrics := func() *telemetry.Metrics {
		m := telemetry.NewMetrics(telemetry.WithToolNames("echo"))
		prometheus.NewRegistry().MustRegister(m)
		return m
	}
	cases := []struct {
		name string
		opts func(b *testing.B) ([]server.Option, func(middleware.ConnServer) middleware.ConnServer)
	}{
		{"none", func(*testing.B) ([]server.Option, func(middleware.ConnServer) middleware.ConnServer) { return nil, nil }},
		{"recover", func(*testing.B) ([]server.Option, func(middleware.ConnServer) middleware.ConnServer) {
			return []server.Option{server.WithMiddleware(middleware.Recover(nil))}, nil
		}},
		{"metrics", func(*testing.B) ([]server.Option, func(middleware.ConnServer) middleware.ConnServer) {
			m := newMetrics()
			return []server.Option{server.WithMiddleware(middleware.Metrics(m)), server.WithObserver(middleware.Observer(m))}, nil
		}},
		{"instrument", func(*testing.B) ([]server.Option, func(middleware.ConnServer) middleware.ConnServer) {
			m := newMetrics()
			return nil, func(s middleware.ConnServer) middleware.ConnServer {
				return middleware.Instrument(s, m, telemetry.TransportMemory)
			}
		}},
		{"tracing", func(b *testing.B) ([]server.Option, func(middleware.ConnServer) middleware.ConnServer) {
			return []server.Option{server.WithMiddleware(middleware.Tracing(middleware.WithTracerProvider(newTP(b))))}, nil
		}},
		{"full", func(b *testing.B) ([]server.Option, func(middleware.ConnServer) middleware.ConnServer) {
			m := newMetrics()
			opts := []server.Option{
				server.WithMiddleware(middleware.Standard(middleware.StandardConfig{TracerProvider: newTP(b), Metrics: m})...),
				server.WithObserver(middleware.Observer(m)),
			}
			wrap := func(s middleware.ConnServer) middleware.ConnServer {
				return middleware.Instrument(s, m, telemetry.TransportMemory)
			}
			return opts, wrap
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			opts, wrap := c.opts(b)
			srv := server.New(opts...)
			require.NoError(b, srv.AddTool(server.Tool{Name: "echo"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
				return server.Text("hello"), nil
			}))
			var served middleware.ConnServer = srv
			if wrap != nil {
				served = wrap(srv)
			}
			benchChainRun(b, served)
		})
	}
}

func benchChainRun(b *testing.B, srv middleware.ConnServer) {
	client, srvEnd := memory.NewPair()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), srvEnd) }()
	ctx := context.Background()
	require.NoError(b, client.WriteFrame(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)))
	_, err := client.Read(ctx)
	require.NoError(b, err)
	call := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := client.WriteFrame(ctx, call); err != nil {
			b.Fatal(err)
		}
		m, err := client.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if resp, ok := m.(*transport.Response); !ok || resp.Error != nil {
			b.Fatalf("unexpected answer %#v", m)
		}
	}
	b.StopTimer()
	require.NoError(b, client.Close())
	require.NoError(b, <-done)
}
