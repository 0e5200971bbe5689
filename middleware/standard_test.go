package middleware_test

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestStandardSelects checks which middleware Standard returns for a
// config: Recover always, the others when their field is set.
func TestStandardSelects(t *testing.T) {
	t.Parallel()
	tp := sdktrace.NewTracerProvider()
	tests := []struct {
		name string
		cfg  middleware.StandardConfig
		want int
	}{
		{name: "zero: Recover only", want: 1},
		{name: "tracing", cfg: middleware.StandardConfig{TracerProvider: tp}, want: 2},
		{name: "metrics", cfg: middleware.StandardConfig{Metrics: telemetry.NewMetrics()}, want: 2},
		{name: "logging", cfg: middleware.StandardConfig{Logger: slog.New(slog.DiscardHandler)}, want: 2},
		{name: "timeout", cfg: middleware.StandardConfig{Timeout: time.Second}, want: 2},
		{name: "TimeoutFor", cfg: middleware.StandardConfig{TimeoutFor: func(*server.Request) time.Duration { return 0 }}, want: 2},
		{name: "limit", cfg: middleware.StandardConfig{ConcurrencyLimit: 1}, want: 2},
		{name: "LimitFor", cfg: middleware.StandardConfig{LimitFor: func(string) int { return 1 }}, want: 2},
		{name: "all", cfg: middleware.StandardConfig{
			TracerProvider: tp, Metrics: telemetry.NewMetrics(), Logger: slog.New(slog.DiscardHandler),
			Timeout: time.Second, ConcurrencyLimit: 1,
		}, want: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			mw := middleware.Standard(tt.cfg)
			assert.Len(t, mw, tt.want)
			assert.NotContains(t, mw, nil)
		})
	}
}

// TestStandardOrder runs the full chain of Standard in fake time and
// checks what its order promises: a rejection by the limit, a recovered
// panic and a timeout are each counted by Metrics as an error, logged by
// Logging and an Error span of Tracing; the timeout is also a cancellation
// with cause timeout, in the metrics and on the span.
func TestStandardOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		spans := tracetest.NewSpanRecorder()
		logs := newCapture(slog.LevelDebug)
		m := telemetry.NewMetrics()
		prometheus.NewRegistry().MustRegister(m)
		srv := server.New(
			server.WithMiddleware(middleware.Standard(middleware.StandardConfig{
				TracerProvider:   sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
				Propagator:       propagation.TraceContext{},
				Metrics:          m,
				Logger:           slog.New(logs),
				Timeout:          time.Second,
				ConcurrencyLimit: 1,
			})...),
			server.WithObserver(middleware.Observer(m)),
		)
		addTools(t, srv)
		addGuardTools(t, srv)
		m.SetToolNames(srv.ToolNames())
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
			finished("tools/call", "error"):           3,
			durCount("-32000", "hold", "tools/call"):  1,
			durCount("-32603", "panic", "tools/call"): 1,
			durCount("-32001", "hold", "tools/call"):  1,
			cancellations("tools/call", "timeout"):    1,
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
			"INFO request method=initialize request_id=1 session_id=SID duration=0s outcome=ok",
			"WARN " + call("3", "hold") + ` duration=0s outcome=error code=-32000 error=mcp error -32000: server busy: tool "hold" is at its concurrency limit`,
			"ERROR handler panicked method=tools/call id=4 panic=boom",
			"WARN " + call("4", "panic") + " duration=0s outcome=error code=-32603 error=panic: boom",
			"WARN " + call("2", "hold") + " duration=1s outcome=error code=-32001 error=mcp: handler timeout cause=timeout",
		}, lines)

		var ended []string
		for _, s := range spans.Ended() {
			line := fmt.Sprintf("%s %s %q", s.Name(), s.Status().Code, s.Status().Description)
			for _, e := range s.Events() {
				line += " " + e.Name
				for _, a := range e.Attributes {
					if a.Key == telemetry.CancelCauseKey {
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
