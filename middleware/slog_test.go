package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// records decodes the JSON lines written so far.
func (b *lockedBuffer) records(t *testing.T) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(b.buf.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		delete(m, "time")
		delete(m, "level")
		out = append(out, m)
	}
	return out
}

// logEach logs one record per message the chain sees, with its context.
func logEach(l *slog.Logger) server.Middleware {
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			l.InfoContext(ctx, req.Method, "k", "v")
			return next(ctx, req)
		}
	}
}

func TestLogHandlerInTheChain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &lockedBuffer{}
		logger := slog.New(middleware.LogHandler(slog.NewJSONHandler(out, nil)))
		h := newTraced(t, []server.Middleware{logEach(logger)}).start(t.Context(), nil)
		h.Initialize("", nil)
		h.SendCallTool(2, "echo", nil)
		h.RecvResponseTo(2)
		synctest.Wait()
		sid := h.sessionID()
		h.close()

		ids := func(name string) (string, string) {
			sc := h.span(name).SpanContext()
			return sc.TraceID().String(), sc.SpanID().String()
		}
		tr1, sp1 := ids("initialize")
		tr2, sp2 := ids("notifications/initialized")
		tr3, sp3 := ids("tools/call echo")
		assert.Equal(t, []map[string]any{
			{"msg": "initialize", "k": "v", "trace_id": tr1, "span_id": sp1, "session_id": sid, "request_id": "1"},
			{"msg": "notifications/initialized", "k": "v", "trace_id": tr2, "span_id": sp2, "session_id": sid},
			{"msg": "tools/call", "k": "v", "trace_id": tr3, "span_id": sp3, "session_id": sid, "request_id": "2"},
		}, out.records(t))
	})
}

func TestLogHandler(t *testing.T) {
	t.Parallel()
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: ambientSC.TraceID(), SpanID: ambientSC.SpanID(), TraceFlags: trace.FlagsSampled})
	tests := []struct {
		name string
		ctx  context.Context
		log  func(l *slog.Logger, ctx context.Context)
		want []map[string]any
	}{
		{
			name: "no ids in the context",
			ctx:  context.Background(),
			log:  func(l *slog.Logger, ctx context.Context) { l.InfoContext(ctx, "plain", "a", 1) },
			want: []map[string]any{{"msg": "plain", "a": float64(1)}},
		},
		{
			name: "a span only",
			ctx:  trace.ContextWithSpanContext(context.Background(), sc),
			log:  func(l *slog.Logger, ctx context.Context) { l.InfoContext(ctx, "traced") },
			want: []map[string]any{{"msg": "traced", "trace_id": sc.TraceID().String(), "span_id": sc.SpanID().String()}},
		},
		{
			name: "WithAttrs and WithGroup pass through",
			ctx:  trace.ContextWithSpanContext(context.Background(), sc),
			log: func(l *slog.Logger, ctx context.Context) {
				l.With("svc", "x").WithGroup("g").InfoContext(ctx, "grouped", "a", 1)
			},
			want: []map[string]any{{"msg": "grouped", "svc": "x", "g": map[string]any{
				"a": float64(1), "trace_id": sc.TraceID().String(), "span_id": sc.SpanID().String(),
			}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := &lockedBuffer{}
			tt.log(slog.New(middleware.LogHandler(slog.NewJSONHandler(out, nil))), tt.ctx)
			assert.Equal(t, tt.want, out.records(t))
		})
	}
}

func TestLogHandlerNilAndEnabled(t *testing.T) {
	t.Parallel()
	h := middleware.LogHandler(nil)
	assert.False(t, h.Enabled(context.Background(), slog.LevelError))
	require.NoError(t, h.Handle(context.Background(), slog.NewRecord(time.Time{}, slog.LevelInfo, "x", 0)))

	warn := middleware.LogHandler(slog.NewJSONHandler(&lockedBuffer{}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	assert.False(t, warn.Enabled(context.Background(), slog.LevelInfo))
	assert.True(t, warn.Enabled(context.Background(), slog.LevelWarn))
}

// A handler that fans one record out may pass it to LogHandler more than
// once; the ids must not be written into storage the copies share.
func TestLogHandlerSharedRecord(t *testing.T) {
	t.Parallel()
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: ambientSC.TraceID(), SpanID: ambientSC.SpanID()})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	r := slog.NewRecord(time.Time{}, slog.LevelInfo, "shared", 0)
	// Five attributes fit in the record itself; the others go to a slice
	// with room to spare, which copies of r share.
	r.AddAttrs(slog.Int("a", 1), slog.Int("b", 2), slog.Int("c", 3), slog.Int("d", 4), slog.Int("e", 5))
	for _, k := range []string{"f", "g", "h", "i", "j"} {
		r.AddAttrs(slog.Int(k, 0)) // one at a time: five in a slice of capacity eight
	}
	out := &lockedBuffer{}
	h := middleware.LogHandler(slog.NewJSONHandler(out, nil))
	require.NoError(t, h.Handle(ctx, r))
	require.NoError(t, h.Handle(ctx, r))
	want := map[string]any{
		"msg": "shared", "a": float64(1), "b": float64(2), "c": float64(3), "d": float64(4), "e": float64(5), "f": float64(0),
		"g": float64(0), "h": float64(0), "i": float64(0), "j": float64(0), "trace_id": sc.TraceID().String(), "span_id": sc.SpanID().String(),
	}
	assert.Equal(t, []map[string]any{want, want}, out.records(t))
	assert.Equal(t, 10, r.NumAttrs(), "the caller's record is unchanged")
}

// opaqueHandler hides the LogHandler it wraps, so that Logging logs
// through slog.Logger.LogAttrs rather than building the record itself.
type opaqueHandler struct{ slog.Handler }

// TestLoggingRecordThroughLogHandler checks that the record Logging builds
// for a LogHandler (with the ids in it) is written byte for byte as the one
// LogAttrs passes to it, in a traced chain (trace_id and span_id added) and
// for an error answer.
func TestLoggingRecordThroughLogHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		noTime := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}
		direct, generic := &lockedBuffer{}, &lockedBuffer{}
		h := newTraced(t, []server.Middleware{
			middleware.Logging(slog.New(middleware.LogHandler(slog.NewTextHandler(direct, noTime)))),
			middleware.Logging(slog.New(opaqueHandler{middleware.LogHandler(slog.NewTextHandler(generic, noTime))})),
		}).start(t.Context(), nil)
		h.Initialize("", nil)
		h.SendCallTool(2, "echo", nil)
		h.RecvResponseTo(2)
		h.SendCallTool(3, "no such tool", nil)
		h.RecvResponseTo(3)
		synctest.Wait()
		h.close()
		direct.mu.Lock()
		defer direct.mu.Unlock()
		generic.mu.Lock()
		defer generic.mu.Unlock()
		assert.Equal(t, 3, strings.Count(direct.buf.String(), "span_id="), direct.buf.String())
		assert.Contains(t, direct.buf.String(), `level=WARN msg=request method=tools/call tool="no such tool" request_id=3`)
		lines := func(b *lockedBuffer) []string { // the requests end concurrently
			l := strings.Split(b.buf.String(), "\n")
			slices.Sort(l)
			return l
		}
		assert.Equal(t, lines(generic), lines(direct))
	})
}
