package middleware_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
)

// auditLines decodes the audit log's lines; each must be one JSON object.
func auditLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %q", sc.Text())
		lines = append(lines, m)
	}
	return lines
}

var alice = &auth.Principal{Subject: "alice", Issuer: "https://issuer.example", ClientID: "claude-desktop", Scopes: []string{"mcp"}}

// TestAudit runs tools/call requests of each outcome through Audit, with a
// principal on the session's context and argument values opted in for
// echo only, and checks each line field by field.
func TestAudit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		audit := middleware.Audit(&out, middleware.WithAuditArgumentValues("echo"))
		r := newRig(t, []server.Middleware{audit, timeoutMiddleware(time.Second)}).
			startCtx(auth.ContextWithPrincipal(context.Background(), alice), nil)
		r.Initialize("", nil)
		r.Request(2, "ping", nil)
		require.Nil(t, r.RecvResponseTo(2).Error)
		r.SendCallTool(3, "echo", map[string]any{"text": "hello", "b": 1})
		require.Nil(t, r.RecvResponseTo(3).Error)
		synctest.Wait()
		r.SendCallTool(4, "fail", map[string]any{"password": "hunter2", "user": "bob"})
		require.Nil(t, r.RecvResponseTo(4).Error)
		synctest.Wait()
		r.SendCallTool(5, "sleep", nil)
		require.NotNil(t, r.RecvResponseTo(5).Error, "timed out")
		synctest.Wait()
		r.SendCallTool(6, "block", map[string]any{})
		synctest.Wait()
		r.Cancel(6, "changed my mind")
		synctest.Wait()
		r.close()

		raw := out.String()
		assert.NotContains(t, raw, "hunter2", "values of tools not opted in are never logged")
		lines := auditLines(t, raw)
		require.Len(t, lines, 4, "one line per tools/call, none for ping:\n%s", raw)
		sid := lines[0]["session_id"]
		require.NotEmpty(t, sid)
		for i, l := range lines {
			ts, ok := l["time"].(string)
			require.True(t, ok, "line %d", i)
			_, err := time.Parse(time.RFC3339Nano, ts)
			require.NoError(t, err)
			delete(l, "time")
			assert.Equal(t, sid, l["session_id"])
			delete(l, "session_id")
		}
		assert.Equal(t, []map[string]any{
			{
				"subject": "alice", "client_id": "claude-desktop", "request_id": "3", "tool": "echo", "outcome": "ok",
				"duration_seconds": 0.0, "arguments": []any{"b", "text"}, "argument_values": map[string]any{"text": "hello", "b": 1.0},
			},
			{
				"subject": "alice", "client_id": "claude-desktop", "request_id": "4", "tool": "fail", "outcome": "ok",
				"tool_error": true, "duration_seconds": 0.0, "arguments": []any{"password", "user"},
			},
			{
				"subject": "alice", "client_id": "claude-desktop", "request_id": "5", "tool": "sleep", "outcome": "error",
				"code": -32001.0, "cause": "timeout", "duration_seconds": 1.5, "arguments": []any{}, // the sleep ignores its context
			},
			{
				"subject": "alice", "client_id": "claude-desktop", "request_id": "6", "tool": "block", "outcome": "cancelled",
				"cause": "client_cancel", "reason": "cancelled", "duration_seconds": 0.0, "arguments": []any{},
			},
		}, lines)
	})
}

// Without a principal (authorization off), the line has no subject and no
// client_id; a nil writer makes Audit the identity.
func TestAuditWithoutPrincipal(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		r := newRig(t, []server.Middleware{middleware.Audit(&out), middleware.Audit(nil)}).start(nil)
		r.Initialize("", nil)
		r.SendCallTool(2, "echo", map[string]any{"text": "x"})
		require.Nil(t, r.RecvResponseTo(2).Error)
		synctest.Wait()
		r.close()
		lines := auditLines(t, out.String())
		require.Len(t, lines, 1)
		assert.NotContains(t, lines[0], "subject")
		assert.NotContains(t, lines[0], "client_id")
		assert.NotContains(t, lines[0], "argument_values")
		assert.Equal(t, []any{"text"}, lines[0]["arguments"])
		assert.Equal(t, "ok", lines[0]["outcome"])
	})
}

// The audit log reads the arguments as the tool does, member names matched
// exactly: a later "ARGUMENTS" (which encoding/json would take) neither
// changes the recorded values nor adds names; a repeated argument name is
// recorded once.
func TestAuditArgumentsExactNames(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		r := newRig(t, []server.Middleware{middleware.Audit(&out, middleware.WithAuditArgumentValues("echo"))}).start(nil)
		r.Initialize("", nil)
		r.Request(2, "tools/call", `{"name":"echo","arguments":{"target":"prod"},"ARGUMENTS":{"target":"staging","extra":1}}`)
		require.Nil(t, r.RecvResponseTo(2).Error)
		synctest.Wait()
		r.Request(3, "tools/call", `{"name":"echo","arguments":{"b":1,"a":2,"b":3}}`)
		require.Nil(t, r.RecvResponseTo(3).Error)
		synctest.Wait()
		r.close()
		lines := auditLines(t, out.String())
		require.Len(t, lines, 2)
		assert.Equal(t, []any{"target"}, lines[0]["arguments"])
		assert.Equal(t, map[string]any{"target": "prod"}, lines[0]["argument_values"])
		assert.Equal(t, []any{"a", "b"}, lines[1]["arguments"])
	})
}

// NewInstrumentation with WithAuditLog adds Audit to its chain.
func TestInstrumentationAuditLog(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		inst, err := middleware.NewInstrumentation(middleware.WithAuditLog(&out))
		require.NoError(t, err)
		r := newRig(t, inst.Middleware()).start(nil)
		r.Initialize("", nil)
		r.SendCallTool(2, "echo", map[string]any{"text": "x"})
		require.Nil(t, r.RecvResponseTo(2).Error)
		synctest.Wait()
		r.close()
		lines := auditLines(t, out.String())
		require.Len(t, lines, 1)
		assert.Equal(t, "echo", lines[0]["tool"])
	})
}

// The span of an authorized request carries user.id and
// vigil.oauth.client_id; that of a request without a principal neither.
func TestTracingPrincipalAttributes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		p    *auth.Principal
	}{{name: "principal", p: alice}, {name: "none"}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				rec := tracetest.NewSpanRecorder()
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
				ctx := context.Background()
				if tt.p != nil {
					ctx = auth.ContextWithPrincipal(ctx, tt.p)
				}
				newRig(t, []server.Middleware{middleware.Tracing(middleware.WithTracerProvider(tp))}).startCtx(ctx, nil).callEcho()
				_, attrs := echoSpan(t, rec)
				if tt.p != nil {
					assert.Equal(t, "alice", attrs["user.id"])
					assert.Equal(t, "claude-desktop", attrs["vigil.oauth.client_id"])
				} else {
					assert.NotContains(t, attrs, "user.id")
					assert.NotContains(t, attrs, "vigil.oauth.client_id")
				}
			})
		})
	}
}

// The request log line of an authorized request carries its subject.
func TestLoggingSubject(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		p       *auth.Principal
		handler func(*lockedBuffer) slog.Handler
	}{
		{name: "principal", p: alice, handler: func(b *lockedBuffer) slog.Handler { return slog.NewTextHandler(b, nil) }},
		{name: "principal, LogHandler", p: alice, handler: func(b *lockedBuffer) slog.Handler {
			return middleware.LogHandler(slog.NewTextHandler(b, nil))
		}},
		{name: "none", handler: func(b *lockedBuffer) slog.Handler { return slog.NewTextHandler(b, nil) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var out lockedBuffer
				ctx := context.Background()
				if tt.p != nil {
					ctx = auth.ContextWithPrincipal(ctx, tt.p)
				}
				newRig(t, []server.Middleware{middleware.Logging(slog.New(tt.handler(&out)))}).startCtx(ctx, nil).callEcho()
				line := echoLine(t, out.String())
				if tt.p != nil {
					assert.Contains(t, line, " subject=alice ")
				} else {
					assert.NotContains(t, line, "subject=")
				}
			})
		})
	}
}

// With tracing, metrics and logging as one (NewInstrumentation), which
// reads the principal and the span's context once for all three, the log
// line of an authorized request carries its subject and the ids of its
// span, and the span its user.
func TestInstrumentationSubjectAndTraceIDs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		var out lockedBuffer
		inst, err := middleware.NewInstrumentation(middleware.WithTracerProvider(tp), middleware.WithRegisterer(prometheus.NewRegistry()),
			middleware.WithRequestLog(slog.New(middleware.LogHandler(newTextLines(&out, nil)))))
		require.NoError(t, err)
		srv := server.New(inst.ServerOptions()...)
		addTools(t, srv)
		(&rig{t: t, m: middleware.MetricsOf(inst), srv: srv}).startCtx(auth.ContextWithPrincipal(context.Background(), alice), nil).callEcho()

		line := echoLine(t, out.String())
		assert.Contains(t, line, " subject=alice ")
		sc, attrs := echoSpan(t, spans)
		assert.Contains(t, line, " trace_id="+sc.TraceID().String()+" span_id="+sc.SpanID().String())
		assert.Equal(t, "alice", attrs["user.id"])
	})
}

// callEcho initializes r's session, calls echo once and closes r, once
// the call's records are written. Call it inside a synctest bubble.
func (r *rig) callEcho() {
	r.Initialize("", nil)
	r.SendCallTool(2, "echo", nil)
	require.Nil(r.t, r.RecvResponseTo(2).Error)
	synctest.Wait()
	r.close()
}

// echoLine returns the log line of the echo call in out.
func echoLine(t *testing.T, out string) string {
	t.Helper()
	var line string
	for l := range strings.SplitSeq(out, "\n") {
		if strings.Contains(l, "tool=echo") {
			line = l
		}
	}
	require.NotEmpty(t, line, out)
	return line
}

// echoSpan returns the context and attributes of the echo call's span
// among rec's.
func echoSpan(t *testing.T, rec *tracetest.SpanRecorder) (trace.SpanContext, map[string]string) {
	t.Helper()
	for _, s := range rec.Ended() {
		if s.Name() == "tools/call echo" {
			attrs := map[string]string{}
			for _, kv := range s.Attributes() {
				attrs[string(kv.Key)] = kv.Value.String()
			}
			return s.SpanContext(), attrs
		}
	}
	require.FailNow(t, "no span of the echo call")
	return trace.SpanContext{}, nil
}

// A hostile tools/call cannot make a long audit line: 1,000 argument names
// of 200 bytes, each escaped six times over (control characters), with values
// opted in; a 1 MiB tool name; a 1 MiB request id. Each line stays under
// 16 KiB and says what was cut; a plain call's line is whole.
func TestAuditLineBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		r := newRig(t, []server.Middleware{middleware.Audit(&out, middleware.WithAuditArgumentValues("echo"))}).start(nil)
		r.Initialize("", nil)
		args := make(map[string]any, 1000)
		for i := range 1000 {
			args[fmt.Sprintf("%05d%s", i, strings.Repeat("\x01", 200))] = i
		}
		r.SendCallTool(2, "echo", args)
		require.Nil(t, r.RecvResponseTo(2).Error)
		synctest.Wait()
		// A tool name over the spec's 128 bytes is refused at admission, before
		// the middleware: no line. One of 128 bytes is audited whole.
		r.SendCallTool(3, strings.Repeat("é", 1<<19), map[string]any{"a": 1}) // 1 MiB
		require.NotNil(t, r.RecvResponseTo(3).Error)
		synctest.Wait()
		r.SendCallTool(5, strings.Repeat("é", 64), map[string]any{"a": 1})
		r.RecvResponseTo(5) // an error: no such tool
		synctest.Wait()
		// A long id may be refused before the middleware: then it has no line.
		r.Send(&transport.Request{ID: transport.StringID(strings.Repeat("i", 1<<20)), Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"a":1}}`)})
		r.Recv()
		synctest.Wait()
		r.SendCallTool(4, "echo", map[string]any{"text": "hello"})
		require.Nil(t, r.RecvResponseTo(4).Error)
		synctest.Wait()
		r.close()

		raw := out.String()
		for i, line := range strings.SplitAfter(raw, "\n") {
			assert.Less(t, len(line), 16<<10, "line %d", i)
		}
		lines := auditLines(t, raw)
		require.GreaterOrEqual(t, len(lines), 3, "the calls of echo and of the 128-byte name")
		first := lines[0]
		assert.Equal(t, true, first["truncated"])
		assert.NotContains(t, first, "argument_values", "values over their bound are left out")
		names := first["arguments"].([]any)
		require.NotEmpty(t, names)
		assert.LessOrEqual(t, len(names), 64)
		assert.EqualValues(t, 1000-len(names), first["more_arguments"], "every name is listed or counted")
		assert.Equal(t, "00000"+strings.Repeat("\x01", 123), names[0], "the first names, sorted, cut to 128 bytes")
		long := lines[1]
		assert.NotContains(t, long, "truncated")
		assert.Equal(t, strings.Repeat("é", 64), long["tool"], "128 bytes, whole")
		if len(lines) == 4 {
			assert.Equal(t, strings.Repeat("i", 256), lines[2]["request_id"])
			assert.Equal(t, true, lines[2]["truncated"])
		}
		last := lines[len(lines)-1]
		assert.NotContains(t, last, "truncated")
		assert.NotContains(t, last, "more_arguments")
		assert.Equal(t, map[string]any{"text": "hello"}, last["argument_values"])
	})
}

// The bidirectional controls and zero-width characters a client puts in a
// tool name, a request id, argument names or values reach the audit log
// escaped (\u202e, the same string once decoded), never raw (issue 56 N10).
func TestAuditEscapesInvisible(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		r := newRig(t, []server.Middleware{middleware.Audit(&out, middleware.WithAuditArgumentValues("echo"))}).start(nil)
		r.Initialize("", nil)
		r.Send(&transport.Request{ID: transport.StringID("id\u202e1"), Method: "tools/call", Params: json.RawMessage("{\"name\":\"echo\",\"arguments\":{\"text\u2066\":\"hi\u200f\",\"a\u200b\":1}}")})
		r.Recv()
		synctest.Wait()
		r.SendCallTool(3, "ech\u202eo", nil)
		r.RecvResponseTo(3) // no such tool
		synctest.Wait()
		r.close()

		raw := out.String()
		for _, c := range []string{"\u202e", "\u2066", "\u200f", "\u200b"} {
			assert.NotContains(t, raw, c, "%+q raw in the audit log:\n%s", c, raw)
		}
		assert.Contains(t, raw, `id\u202e1`)
		lines := auditLines(t, raw)
		require.Len(t, lines, 2, raw)
		assert.Equal(t, "id\u202e1", lines[0]["request_id"])
		assert.Equal(t, []any{"a\u200b", "text\u2066"}, lines[0]["arguments"])
		assert.Equal(t, map[string]any{"text\u2066": "hi\u200f", "a\u200b": 1.0}, lines[0]["argument_values"])
		assert.Equal(t, "ech\u202eo", lines[1]["tool"])
	})
}

// A delegated request (a token with an act chain) shows its actors on
// behalf of its subject: the span's vigil.oauth.actors, the log line's
// actor before the subject's, the audit record's actors.
func TestDelegatedPrincipalShown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		delegated := &auth.Principal{Subject: "alice", Issuer: "https://issuer.example", ClientID: "agent-app", Actors: []string{"agent", "gateway"}}
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
		var out, audited lockedBuffer
		inst, err := middleware.NewInstrumentation(middleware.WithTracerProvider(tp), middleware.WithRegisterer(prometheus.NewRegistry()),
			middleware.WithRequestLog(slog.New(middleware.LogHandler(newTextLines(&out, nil)))))
		require.NoError(t, err)
		srv := server.New(append(inst.ServerOptions(), server.WithMiddleware(middleware.Audit(&audited)))...)
		addTools(t, srv)
		r := (&rig{t: t, m: middleware.MetricsOf(inst), srv: srv}).startCtx(auth.ContextWithPrincipal(context.Background(), delegated), nil)
		r.callEcho()
		synctest.Wait()
		r.close()

		line := echoLine(t, out.String())
		assert.Contains(t, line, ` subject=alice actor="agent on behalf of gateway" `)
		_, attrs := echoSpan(t, spans)
		assert.Equal(t, "alice", attrs["user.id"])
		assert.Equal(t, `["agent","gateway"]`, attrs["vigil.oauth.actors"])
		lines := auditLines(t, audited.String())
		require.Len(t, lines, 1)
		assert.Equal(t, []any{"agent", "gateway"}, lines[0]["actors"])
		assert.Equal(t, "alice", lines[0]["subject"])
	})
}
