package middleware_test

// The overhead of the instrumentation: tools/call echo over loopback
// Streamable HTTP, 32 concurrent clients each with a 2025 session, without
// middleware and with the full chain (Tracing sampling every request into a
// batching span processor whose exporter discards, Metrics registered with a
// registry, Recover and the Observer; ...Traffic adds CountConns counting
// every message). The cost is the ratio of the req/s from one run of all:
//
//	go test -run '^$' -bench 'HTTPEcho' -benchtime=3s -count=3 ./middleware/
//
// BenchmarkHTTPEchoSpanOnly is the reference for the tracing part: the
// OpenTelemetry SDK by itself, one span per request with the same
// attributes into the same batching processor, no Vigil middleware. What
// any instrumentation that records every request pays, whoever writes it.
//
// On a machine whose speed drifts (a shared VM), separate runs of these
// benchmarks disagree by several percent; BenchmarkHTTPEchoOverhead
// (bench_overhead_test.go) interleaves the two servers in one run instead
// and reports the cost directly.
//
// Each benchmark reports req/s, the p99 latency one client saw (p99-µs)
// and, on Linux, the process's CPU time per request (cpu-µs/op, client and
// server together, 10 ms resolution), which is less sensitive than req/s to
// other load on the machine. The harness is that of
// transport/streamable/bench_test.go.

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/asyncwriter"
	"github.com/vigil-mcp/vigil/internal/loadgen"
	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// benchWorkers is the number of concurrent clients.
const benchWorkers = 32

// benchEchoBody is the tools/call echo request with the given id.
func benchEchoBody(dst []byte, id int64) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = strconv.AppendInt(dst, id, 10)
	return append(dst, `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`...)
}

// benchWant is in every answer.
var benchWant = []byte(`"content":[{"type":"text","text":"hello"}]`)

// discardExporter is a span exporter that drops every span: the batching
// processor in front of it does all its work, nothing leaves the process.
type discardExporter struct{ spans atomic.Int64 }

func (e *discardExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.spans.Add(int64(len(spans)))
	return nil
}

func (*discardExporter) Shutdown(context.Context) error { return nil }

// benchServe starts srv, with the echo tool, behind a loopback server;
// wrap, if not nil, wraps the server the transport serves.
func benchServe(b *testing.B, srv *server.Server, wrap func(streamable.Server) streamable.Server) (*httptest.Server, *http.Client) {
	err := srv.AddTool(server.Tool{
		Name:        "echo",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}, func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		var in struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(req.Arguments, &in); err != nil {
			return nil, err
		}
		return server.Text(in.Text), nil
	})
	if err != nil {
		b.Fatal(err)
	}
	var served streamable.Server = srv
	if wrap != nil {
		served = wrap(srv)
	}
	h := streamable.New(served)
	ts := httptest.NewServer(h)
	client := loadgen.NewClient()
	// Last in, first out: the client's connections, the sessions, the server.
	b.Cleanup(ts.Close)
	b.Cleanup(func() { _ = h.Close() })
	b.Cleanup(client.CloseIdleConnections)
	return ts, client
}

// benchEcho runs the echo benchmark against srv: a session per worker.
func benchEcho(b *testing.B, srv *server.Server, wrap func(streamable.Server) streamable.Server) {
	t := newBenchTarget(b, srv, wrap)
	loadgen.Bench(b, t.client, benchWorkers, benchWant, t.request)
}

// benchTarget is a served server and, for each worker, a session on it.
type benchTarget struct {
	url    string
	client *http.Client
	sids   []string // by worker
}

func newBenchTarget(b *testing.B, srv *server.Server, wrap func(streamable.Server) streamable.Server) benchTarget {
	ts, client := benchServe(b, srv, wrap)
	t := benchTarget{url: ts.URL, client: client, sids: make([]string, benchWorkers)}
	for w := range t.sids {
		sid, err := loadgen.OpenSession(client, ts.URL, "2025-11-25")
		if err != nil {
			b.Fatal(err)
		}
		t.sids[w] = sid
	}
	return t
}

// request is worker w's echo call with id.
func (t benchTarget) request(w int, id int64) *http.Request {
	return loadgen.SessionPost(t.url, t.sids[w], "2025-11-25", benchEchoBody(nil, id))
}

// BenchmarkHTTPEchoNoMiddleware: the server without middleware.
func BenchmarkHTTPEchoNoMiddleware(b *testing.B) {
	benchEcho(b, server.New(), nil)
}

// benchTracerProvider samples every span into a batching processor whose
// exporter discards them.
func benchTracerProvider(b *testing.B) *sdktrace.TracerProvider {
	return benchTracerProviderSampling(b, sdktrace.AlwaysSample())
}

// benchTracerProviderSampling is benchTracerProvider with another sampler.
func benchTracerProviderSampling(b *testing.B, sampler sdktrace.Sampler) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithBatcher(&discardExporter{}))
	b.Cleanup(func() {
		if err := tp.Shutdown(context.Background()); err != nil {
			b.Error(err)
		}
	})
	return tp
}

// BenchmarkHTTPEchoSpanOnly: the OpenTelemetry SDK alone, as cheaply as it
// can be used: a SERVER span per request with the eight attributes Tracing
// sets on a tools/call span, set after the start (cheaper than as a start
// option), ended when the handler returns.
func BenchmarkHTTPEchoSpanOnly(b *testing.B) {
	benchEcho(b, benchSpanOnly(b), nil)
}

// benchSpanOnly returns a server whose only middleware starts and ends a
// span per request with the SDK, as BenchmarkHTTPEchoSpanOnly describes.
func benchSpanOnly(b *testing.B) *server.Server {
	tracer := benchTracerProvider(b).Tracer("bench")
	attrs := []attribute.KeyValue{
		mcpconv.MCPMethodNameKey.String("tools/call"), mcpconv.GenAIToolNameKey.String("echo"),
		mcpconv.GenAIOperationNameKey.String(mcpconv.OperationExecuteTool), mcpconv.JSONRPCRequestIDKey.String("1"),
		mcpconv.MCPSessionIDKey.String("session"), mcpconv.MCPProtocolVersionKey.String("2025-11-25"),
		attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http"),
	}
	kind := trace.WithSpanKind(trace.SpanKindServer)
	span := func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			ctx, span := tracer.Start(ctx, "tools/call echo", kind)
			span.SetAttributes(attrs...)
			defer span.End()
			return next(ctx, req)
		}
	}
	return server.New(server.WithMiddleware(span))
}

// BenchmarkHTTPEchoFullChain: what middleware.NewInstrumentation builds with
// a tracer provider and a registerer: Tracing (every request sampled into a
// batching processor), RecordMetrics and Recover, with MetricsObserver.
func BenchmarkHTTPEchoFullChain(b *testing.B) {
	benchEcho(b, benchFullChain(b, nil), nil)
}

// BenchmarkHTTPEchoFullChainTraffic: the full chain and CountConns counting
// every message and its bytes, as cmd/vigil serves.
func BenchmarkHTTPEchoFullChainTraffic(b *testing.B) {
	var m *metrics.Metrics
	srv := benchFullChain(b, &m)
	benchEcho(b, srv, func(s streamable.Server) streamable.Server {
		return middleware.CountConns(s, m, telemetry.TransportStreamableHTTP)
	})
}

// benchFullChain returns a server with the full chain; the metrics go to
// *metrics when it is not nil.
func benchFullChain(b *testing.B, metrics **metrics.Metrics) *server.Server {
	return benchFullChainWith(benchTracerProvider(b), metrics)
}

// benchFullChainWith is benchFullChain with the given tracer provider. The
// echo tool is registered after the server is built: its label comes from
// the live registry.
func benchFullChainWith(tp *sdktrace.TracerProvider, metrics **metrics.Metrics) *server.Server {
	inst, err := middleware.NewInstrumentation(middleware.WithTracerProvider(tp), middleware.WithRegisterer(prometheus.NewRegistry()))
	if err != nil {
		panic(err)
	}
	if metrics != nil {
		*metrics = middleware.MetricsOf(inst)
	}
	return server.New(inst.ServerOptions()...)
}

// BenchmarkHTTPEchoShipped: the chain cmd/vigil runs by default, as it
// wires it: every request traced into a batching processor, metrics, a log
// record per request through LogHandler and a TextHandler at Info, Recover,
// a 1-minute timeout, a per-tool concurrency limit of 256 (waiting up to 1s
// for a slot), CountConns counting the traffic, and the server's own logger
// and in-flight limit. The log goes to a pipe, as stderr under a container
// runtime.
func BenchmarkHTTPEchoShipped(b *testing.B) {
	srv, wrap := benchShipped(b)
	benchEcho(b, srv, wrap)
}

// benchShipped returns the server of BenchmarkHTTPEchoShipped and the wrap
// that counts its traffic.
func benchShipped(b *testing.B) (*server.Server, func(streamable.Server) streamable.Server) {
	logger := benchShippedLogger(b)
	inst, err := middleware.NewInstrumentation(
		middleware.WithTracerProvider(benchTracerProvider(b)),
		middleware.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})),
		middleware.WithRegisterer(prometheus.NewRegistry()),
		middleware.WithRequestLog(logger),
	)
	if err != nil {
		b.Fatal(err)
	}
	srv := server.New(append(inst.ServerOptions(), server.WithLogger(logger), server.WithMaxInFlightPerSession(256),
		server.WithTimeout(time.Minute), server.WithConcurrencyLimit(256), server.WithLimitWait(time.Second))...)
	return srv, func(s streamable.Server) streamable.Server {
		return inst.ConnServer(s, telemetry.TransportStreamableHTTP)
	}
}

// benchShippedLogger is the logger of cmd/vigil's defaults, writing through
// the same background buffer to a pipe that a goroutine drains, as a
// container runtime drains stderr.
func benchShippedLogger(b *testing.B) *slog.Logger {
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, r)
		_ = r.Close()
	}()
	b.Cleanup(func() {
		_ = w.Close()
		<-drained
	})
	out := asyncwriter.New(w) // as cmd/vigil buffers stderr
	b.Cleanup(func() { _ = out.Close() })
	return slog.New(middleware.LogHandler(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo})))
}
