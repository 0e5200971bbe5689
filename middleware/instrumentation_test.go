package middleware_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestNewInstrumentationSelects checks which middleware NewInstrumentation
// chains for its options: Recover always, the others when their option is
// set, tracing, metrics and logging as one when all three are.
func TestNewInstrumentationSelects(t *testing.T) {
	t.Parallel()
	tp := sdktrace.NewTracerProvider()
	discard := slog.New(slog.DiscardHandler)
	tests := []struct {
		name string
		opts func() []middleware.InstrumentationOption // a fresh registry each time
		want int
	}{
		{name: "zero: Recover only", opts: func() []middleware.InstrumentationOption { return nil }, want: 1},
		{name: "tracing", opts: func() []middleware.InstrumentationOption {
			return []middleware.InstrumentationOption{middleware.WithTracerProvider(tp)}
		}, want: 2},
		{name: "metrics", opts: func() []middleware.InstrumentationOption {
			return []middleware.InstrumentationOption{middleware.WithRegisterer(prometheus.NewRegistry())}
		}, want: 2},
		{name: "logging", opts: func() []middleware.InstrumentationOption {
			return []middleware.InstrumentationOption{middleware.WithRequestLog(discard)}
		}, want: 2},
		{name: "tracing and metrics", opts: func() []middleware.InstrumentationOption {
			return []middleware.InstrumentationOption{middleware.WithTracerProvider(tp), middleware.WithRegisterer(prometheus.NewRegistry())}
		}, want: 3},
		// Tracing, metrics and logging together are one middleware.
		{name: "all", opts: func() []middleware.InstrumentationOption {
			return []middleware.InstrumentationOption{
				middleware.WithTracerProvider(tp), middleware.WithRegisterer(prometheus.NewRegistry()), middleware.WithRequestLog(discard),
				nil,
			}
		}, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inst, err := middleware.NewInstrumentation(tt.opts()...)
			require.NoError(t, err)
			mw := inst.Middleware()
			assert.Len(t, mw, tt.want)
			assert.NotContains(t, mw, nil)
		})
	}
}

// TestInstrumentationServerOptions checks what ServerOptions holds: the
// call middleware only with tracing, the observer only with something to
// observe, and the metrics only with a registerer.
func TestInstrumentationServerOptions(t *testing.T) {
	t.Parallel()
	bare, err := middleware.NewInstrumentation()
	require.NoError(t, err)
	assert.Len(t, bare.ServerOptions(), 1, "the chain alone")
	assert.Nil(t, middleware.MetricsOf(bare))

	reg := prometheus.NewRegistry()
	full, err := middleware.NewInstrumentation(middleware.WithRegisterer(reg),
		middleware.WithTracerProvider(sdktrace.NewTracerProvider()))
	require.NoError(t, err)
	assert.Len(t, full.ServerOptions(), 3, "the chain, the call middleware, the observer")
	require.NotNil(t, middleware.MetricsOf(full))
	families, err := reg.Gather()
	require.NoError(t, err)
	assert.NotEmpty(t, families, "the collector is registered")

	_, err = middleware.NewInstrumentation(middleware.WithRegisterer(reg))
	var already prometheus.AlreadyRegisteredError
	require.ErrorAs(t, err, &already, "a second collector on the same registry")

	var none *middleware.Instrumentation
	assert.Nil(t, none.ServerOptions())
	assert.Nil(t, middleware.MetricsOf(none))
	assert.NotNil(t, none.ConnServer(server.New(), telemetry.TransportMemory))
}

// TestInstrumentationCountsRefusals: the hooks a service wires into its
// endpoint count on the instrumentation's collector, which a second
// registry (an OTLP push) reads through Collector; without metrics, or on
// a nil *Instrumentation, they do nothing.
func TestInstrumentationCountsRefusals(t *testing.T) {
	t.Parallel()
	inst, err := middleware.NewInstrumentation(middleware.WithRegisterer(prometheus.NewRegistry()))
	require.NoError(t, err)
	inst.MessageRejected(protocol.RejectParseError)
	inst.MessageRejected(protocol.RejectParseError)
	inst.QuotaRefused(protocol.QuotaSessions)
	got := series(t, inst.Collector())
	assert.InDelta(t, 2, got[`mcp_server_messages_rejected_total{reason="parse_error"}`], 0, "%v", got)
	assert.InDelta(t, 1, got[`mcp_server_quota_refusals_total{quota="sessions"}`], 0, "%v", got)

	bare, err := middleware.NewInstrumentation()
	require.NoError(t, err)
	assert.Nil(t, bare.Collector())
	bare.MessageRejected(protocol.RejectParseError)
	var none *middleware.Instrumentation
	assert.Nil(t, none.Collector())
	none.QuotaRefused(protocol.QuotaSessions)
}

// TestInstrumentationLearnsTools checks that the metrics label a tool
// registered after the server was built, and after ConnServer, as itself
// with no SetToolNames call; that a name the client made up, or a tool
// removed, is labeled other; and that ConnServer creates the series of the
// tools registered by then at zero.
func TestInstrumentationLearnsTools(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		inst, err := middleware.NewInstrumentation(middleware.WithRegisterer(prometheus.NewRegistry()))
		require.NoError(t, err)
		m := middleware.MetricsOf(inst)
		srv := server.New(inst.ServerOptions()...)
		addTools(t, srv)
		r := &rig{t: t, m: m, srv: srv}
		conns := inst.ConnServer(srv, telemetry.TransportMemory)
		created, err := testutil.CollectAndFormat(m, expfmt.TypeTextPlain, mcpconv.MetricRequestsFinished)
		require.NoError(t, err)
		for _, tool := range srv.ToolNames() {
			assert.Contains(t, string(created), `gen_ai_tool_name="`+tool+`"`, "ConnServer creates a series per registered tool at zero")
		}
		r.Client = mcptest.Pipe(t, conns)
		r.Initialize("", nil)
		synctest.Wait()

		require.NoError(t, srv.AddTool(server.Tool{Name: "late"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("late"), nil
		}))
		r.SendCallTool(2, "late", nil)
		r.RecvResponseTo(2)
		r.SendCallTool(3, "echo", nil)
		r.RecvResponseTo(3)
		r.SendCallTool(4, "made-up", nil)
		r.RecvResponseTo(4)
		srv.RemoveTools("late")
		r.SendCallTool(5, "late", nil)
		r.RecvResponseTo(5)
		synctest.Wait()
		r.close()

		want := map[string]float64{
			durCount("late", "tools/call"):           1,
			durCount("echo", "tools/call"):           1,
			durCount("other", "tools/call"):          2,
			finished("", "late", "tools/call", "ok"): 1,
			finished("", "echo", "tools/call", "ok"): 1,
			fault("-32602", "other", "tools/call"):   2,
		}
		assert.Equal(t, want, pick(series(t, m), slices.Collect(maps.Keys(want))...))
	})
}

// TestInstrumentationOrder runs the full chain of NewInstrumentation in fake time and
// checks what its order promises: a rejection by the limit, a recovered
// panic and a timeout are each counted by Metrics as an error, logged by
// Logging and an Error span of Tracing; the timeout is also a cancellation
// with cause timeout, in the metrics and on the span.
func TestInstrumentationOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		spans := tracetest.NewSpanRecorder()
		logs := newCapture(slog.LevelDebug)
		inst, err := middleware.NewInstrumentation(
			middleware.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))),
			middleware.WithPropagators(propagation.TraceContext{}),
			middleware.WithRegisterer(prometheus.NewRegistry()),
			middleware.WithRequestLog(slog.New(logs)),
		)
		require.NoError(t, err)
		m := middleware.MetricsOf(inst)
		srv := server.New(append(inst.ServerOptions(), server.WithTimeout(time.Second), server.WithConcurrencyLimit(1))...)
		addTools(t, srv)
		addGuardTools(t, srv)
		r := (&rig{t: t, m: m, srv: srv}).start(nil)
		r.Initialize("", nil)
		synctest.Wait()
		sid := sessionID(t, srv)

		t0 := time.Now()
		r.SendCallTool(2, "hold", nil)
		synctest.Wait()
		r.SendCallTool(3, "hold", nil)
		busy(t, r.RecvResponseTo(3), "hold")
		synctest.Wait()
		r.SendCallTool(4, "panic", nil)
		assert.Equal(t, int64(protocol.CodeInternal), r.RecvResponseTo(4).Error.Code)
		synctest.Wait()
		assert.Equal(t, int64(protocol.CodeRequestTimeout), r.RecvResponseTo(2).Error.Code)
		assert.Equal(t, time.Second, time.Since(t0))
		r.close()

		got := series(t, m)
		want := map[string]float64{
			finished("-32000", "hold", "tools/call", "error"):  1,
			finished("-32603", "panic", "tools/call", "error"): 1,
			finished("-32001", "hold", "tools/call", "error"):  1,
			durCount("hold", "tools/call"):                     2,
			durCount("panic", "tools/call"):                    1,
			cancellations("tools/call", "timeout"):             1,
		}
		assert.Equal(t, want, pick(got, slices.Collect(maps.Keys(want))...))

		lines := logs.lines(sid, "SID")
		for i, l := range lines {
			if cut := strings.Index(l, " stack="); cut >= 0 {
				lines[i] = l[:cut] // the stack varies
			}
		}
		call := func(id, tool string) string {
			return "request method=tools/call tool=" + tool + " request_id=" + id + " session_id=SID"
		}
		assert.Equal(t, []string{
			"INFO request method=initialize request_id=1 session_id=SID duration_seconds=0 outcome=ok",
			"WARN " + call("3", "hold") + ` duration_seconds=0 outcome=error code=-32000 error=mcp error -32000: server busy: tool "hold" is at its concurrency limit error_type=-32000`,
			"ERROR handler panicked method=tools/call id=4 panic=boom",
			"WARN " + call("4", "panic") + " duration_seconds=0 outcome=error code=-32603 error=panic: boom error_type=-32603",
			"WARN " + call("2", "hold") + " duration_seconds=1 outcome=error code=-32001 error=mcp: handler timeout cause=timeout error_type=-32001",
		}, lines)

		var ended []string
		for _, s := range spans.Ended() {
			line := fmt.Sprintf("%s %s %q", s.Name(), s.Status().Code, s.Status().Description)
			for _, e := range s.Events() {
				line += " " + e.Name
				for _, a := range e.Attributes {
					if a.Key == mcpconv.CancelCauseKey {
						line += "(" + a.Value.AsString() + ")"
					}
				}
			}
			ended = append(ended, line)
		}
		slices.Sort(ended)
		assert.Equal(t, []string{
			`initialize Unset ""`,
			`notifications/initialized Unset ""`,
			`tools/call hold Error "request timed out" cancelled(timeout)`,
			`tools/call hold Error "server busy: tool \"hold\" is at its concurrency limit"`,
			`tools/call panic Error "internal error" exception`,
		}, ended)
	})
}

// NewInstrumentation runs Tracing, RecordMetrics and Logging as one
// middleware; what it records must be what the three apart record: the
// same log lines, spans (names, attributes, status, events) and series,
// for an answer, a tool error, a JSON-RPC error, a recovered panic, a
// client cancel and a notification.
func TestInstrumentationRecordsAsTheThreeApart(t *testing.T) {
	t.Parallel()
	type records struct {
		lines, spans []string
		series       map[string]float64
	}
	run := func(t *testing.T, together bool) records {
		var rec records
		synctest.Test(t, func(t *testing.T) {
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			logs := newCapture(slog.LevelDebug)
			logger := slog.New(logs)
			reg := prometheus.NewRegistry()
			var opts []server.Option
			var m *metrics.Metrics
			if together {
				inst, err := middleware.NewInstrumentation(middleware.WithTracerProvider(tp), middleware.WithRegisterer(reg), middleware.WithRequestLog(logger))
				require.NoError(t, err)
				require.Len(t, inst.Middleware(), 2, "the three as one, and Recover")
				opts, m = inst.ServerOptions(), middleware.MetricsOf(inst)
			} else {
				m = metrics.New(middleware.MetricsVocabulary())
				reg.MustRegister(m)
				opts = []server.Option{
					server.WithMiddleware(middleware.Tracing(middleware.WithTracerProvider(tp)), middleware.RecordMetrics(m),
						middleware.Logging(logger), middleware.Recover(logger)),
					server.WithObserver(middleware.MetricsObserver(m)),
				}
			}
			srv := server.New(opts...)
			addTools(t, srv)
			r := (&rig{t: t, m: m, srv: srv}).start(nil)
			r.Initialize("", nil)
			synctest.Wait()
			sid := sessionID(t, srv)
			// Each call's record is written after its answer: wait for it,
			// for the records' order.
			for id, tool := range []string{2: "echo", 3: "fail", 4: "nope", 5: "panic"} {
				if tool != "" {
					r.SendCallTool(int64(id), tool, nil)
					r.RecvResponseTo(int64(id))
					synctest.Wait()
				}
			}
			r.SendCallTool(6, "block", nil)
			synctest.Wait()
			r.Cancel(6, "changed my mind")
			synctest.Wait()
			r.close()

			rec.lines = logs.lines(sid, "SID")
			for i, l := range rec.lines {
				if cut := strings.Index(l, " stack="); cut >= 0 {
					rec.lines[i] = l[:cut] // the stack varies
				}
			}
			for _, sp := range spans.Ended() {
				line := fmt.Sprintf("%s %s %q", sp.Name(), sp.Status().Code, sp.Status().Description)
				for _, a := range sp.Attributes() {
					v := a.Value.String()
					if a.Key == mcpconv.MCPSessionIDKey {
						v = "SID"
					}
					line += fmt.Sprintf(" %s=%s", a.Key, v)
				}
				for _, e := range sp.Events() {
					line += " " + e.Name
				}
				rec.spans = append(rec.spans, line)
			}
			slices.Sort(rec.spans)
			rec.series = series(t, m)
			for k := range rec.series {
				if strings.Contains(k, "_sum{") {
					delete(rec.series, k) // durations: fake time, but the bucket counts say enough
				}
			}
		})
		return rec
	}
	apart, together := run(t, false), run(t, true)
	require.Len(t, apart.lines, 7, "initialize, five calls, the panic's own line")
	require.Len(t, apart.spans, 8, "initialize, five calls, two notifications (initialized, cancelled)")
	assert.Equal(t, apart.lines, together.lines)
	assert.Equal(t, apart.spans, together.spans)
	assert.Equal(t, apart.series, together.series)
}

// An application's Observer, added beside the instrumentation's, sees
// every request's outcome, the ones the chain answers itself (a panic)
// too, and no notification's, with no layer of the chain of its own.
func TestInstrumentationBesideAnObserver(t *testing.T) {
	t.Parallel()
	for _, all := range []bool{true, false} {
		t.Run(fmt.Sprint("all=", all), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var obs endRecorder
				var opts []middleware.InstrumentationOption
				wantLayers := 1 // Recover
				if all {
					opts = append(opts, middleware.WithTracerProvider(sdktrace.NewTracerProvider()),
						middleware.WithRegisterer(prometheus.NewRegistry()), middleware.WithRequestLog(slog.New(slog.DiscardHandler)))
					wantLayers = 2 // the three as one, Recover
				}
				inst, err := middleware.NewInstrumentation(opts...)
				require.NoError(t, err)
				assert.Len(t, inst.Middleware(), wantLayers)
				srv := server.New(append(inst.ServerOptions(), server.WithTimeout(time.Second), server.WithObserver(server.Observer{}, server.Observer{RequestEnded: obs.RequestEnded}))...)
				addTools(t, srv)
				r := (&rig{t: t, m: middleware.MetricsOf(inst), srv: srv}).start(nil)
				r.Initialize("", nil)
				synctest.Wait()
				r.SendCallTool(2, "echo", nil)
				r.RecvResponseTo(2)
				synctest.Wait()
				r.SendCallTool(3, "panic", nil)
				r.RecvResponseTo(3)
				synctest.Wait()
				r.close()
				obs.mu.Lock()
				defer obs.mu.Unlock()
				assert.Equal(t, []string{"initialize  err=false", "tools/call echo err=false", "tools/call panic err=true"}, obs.seen)
			})
		})
	}
}

// endRecorder keeps what it hears of each request's end, as an
// Observer's RequestEnded.
type endRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *endRecorder) RequestEnded(_ context.Context, req *server.Request, out server.Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, fmt.Sprintf("%s %s err=%v", req.Method, req.Name, out.Err != nil))
}

// TestInstrumentationOptions checks that WithMetricsConfig reaches the
// collector and that an observer added with server.WithObserver sees the
// sessions next to the metrics observer.
func TestInstrumentationOptions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var obs sessionCounter
		inst, err := middleware.NewInstrumentation(middleware.WithRegisterer(prometheus.NewRegistry()),
			middleware.WithMetricsConfig(telemetry.MetricsConfig{Methods: []string{"x/custom"}}))
		require.NoError(t, err)
		middleware.MetricsOf(inst).RequestStarted("x/custom")
		assert.InDelta(t, 1, series(t, middleware.MetricsOf(inst))[`mcp_server_requests_started_total{mcp_method_name="x/custom"}`], 0)

		srv := server.New(append(inst.ServerOptions(), server.WithObserver(server.Observer{SessionStarted: obs.SessionStarted}))...)
		client, end := memory.NewPair()
		served := make(chan error, 1)
		go func() { served <- inst.ConnServer(srv, telemetry.TransportMemory).Serve(context.Background(), end) }()
		synctest.Wait()
		_ = client.Close()
		require.NoError(t, <-served)
		assert.Equal(t, int32(1), obs.started.Load())
		assert.InDelta(t, 1, series(t, middleware.MetricsOf(inst))[`mcp_server_session_duration_seconds_count{cause="transport_close",transport="memory"}`], 0)
	})
}

// sessionCounter counts the sessions it sees start.
type sessionCounter struct {
	started atomic.Int32
}

func (c *sessionCounter) SessionStarted(context.Context, *server.Session) { c.started.Add(1) }

// A server that cannot attach is served as it is: CountConns wraps
// Serve, and the result does not attach.
func TestCountConnsServeOnly(t *testing.T) {
	t.Parallel()
	served := make(chan transport.Conn, 1)
	var srv serveOnly = func(_ context.Context, c transport.Conn) error { served <- c; return nil }
	wrapped := middleware.CountConns(srv, metrics.New(middleware.MetricsVocabulary()), telemetry.TransportMemory)
	_, attaches := wrapped.(transport.Attacher)
	assert.False(t, attaches)
	a, b := memory.NewPair()
	defer func() { _ = a.Close(); _ = b.Close() }()
	require.NoError(t, wrapped.Serve(context.Background(), b))
	assert.NotNil(t, <-served, "Serve reached the server with a (counting) conn")
}

type serveOnly func(context.Context, transport.Conn) error

func (f serveOnly) Serve(ctx context.Context, c transport.Conn) error { return f(ctx, c) }

// A scrape of the registry given to WithRegisterer counts every request
// answered so far, though its outcome waits for its batch: the collector
// records what waits first, so nobody has to flush.
func TestInstrumentationScrapeFlushesBatches(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		inst, err := middleware.NewInstrumentation(middleware.WithRegisterer(reg))
		require.NoError(t, err)
		srv := server.New(append(inst.ServerOptions(), server.WithOutcomeBatches(100, time.Hour))...)
		addTools(t, srv)
		c := mcptest.Pipe(t, inst.ConnServer(srv, telemetry.TransportMemory))
		c.Initialize("", nil)
		assert.Equal(t, "hi", c.CallTool("echo", nil).Text())
		synctest.Wait() // the call is sealed, and waits for its batch

		finished := func() float64 {
			mfs, err := reg.Gather()
			require.NoError(t, err)
			for _, mf := range mfs {
				if mf.GetName() != mcpconv.MetricRequestsFinished {
					continue
				}
				for _, m := range mf.GetMetric() {
					labels := map[string]string{}
					for _, l := range m.GetLabel() {
						labels[l.GetName()] = l.GetValue()
					}
					if labels[mcpconv.LabelMethod] == "tools/call" && labels[mcpconv.LabelTool] == "echo" &&
						labels[mcpconv.LabelOutcome] == mcpconv.OutcomeOK && labels[mcpconv.LabelErrorType] == "" {
						return m.GetCounter().GetValue()
					}
				}
			}
			return 0
		}
		assert.InDelta(t, 1, finished(), 0, "the call, recorded by the scrape, not by its batch (an hour away)")
		require.NoError(t, srv.Close())
	})
}
