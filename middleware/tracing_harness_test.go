package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
)

// traced is one server with Tracing and TracingCalls recording into a span
// recorder, and one client session over the memory transport. Build it
// inside a synctest bubble.
type traced struct {
	*mcptest.Client // set by start
	t               testing.TB
	rec             *tracetest.SpanRecorder
	srv             *server.Server
	release         chan struct{} // closed to let the "late" tool return
}

// traceTestPropagator is W3C trace context plus baggage.
func traceTestPropagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// newTraced builds the server: Tracing outermost, then extra middleware.
func newTraced(t testing.TB, extra []server.Middleware, opts ...server.Option) *traced {
	return newTracedWith(t, nil, nil, extra, opts...)
}

// newTracedWith is newTraced with more options for the tracer provider
// (sampler) and for Tracing and TracingCalls.
func newTracedWith(t testing.TB, tpOpts []sdktrace.TracerProviderOption, mwOpts []middleware.InstrumentationOption, extra []server.Middleware, opts ...server.Option) *traced {
	h := &traced{t: t, rec: tracetest.NewSpanRecorder(), release: make(chan struct{})}
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(h.rec)}, tpOpts...)...)
	tracer, propagators := middleware.WithTracerProvider(tp), middleware.WithPropagators(traceTestPropagator())
	topts := append([]middleware.InstrumentationOption{tracer, propagators}, mwOpts...)
	mw := append([]server.Middleware{middleware.Tracing(topts...)}, extra...)
	opts = append([]server.Option{
		server.WithMiddleware(mw...),
		server.WithCallMiddleware(middleware.TracingCalls(tracer, propagators)),
	}, opts...)
	h.srv = server.New(opts...)
	h.addTools()
	return h
}

func (h *traced) addTools() {
	tools := map[string]server.ToolHandler{
		"echo": func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("hi"), nil
		},
		"fail": func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return nil, errors.New("the tool failed")
		},
		"block": func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			<-ctx.Done()
			return nil, context.Cause(ctx)
		},
		"late": func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			<-h.release // ignores cancellation: its answer comes too late
			return server.Text("late"), nil
		},
		"panic": func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			panic("boom")
		},
		"ask": func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			var answer json.RawMessage
			if err := server.CallClient(ctx, "elicitation/create", map[string]any{"message": "who?"}, &answer); err != nil {
				return nil, err
			}
			return server.Text(string(answer)), nil
		},
		"baggage": func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(baggageOf(ctx)), nil
		},
	}
	for name, fn := range tools {
		require.NoError(h.t, h.srv.AddTool(server.Tool{Name: name}, fn))
	}
	require.NoError(h.t, h.srv.AddTool(server.Tool{Name: "strict", InputSchema: strictSchema}, tools["echo"]))
	require.NoError(h.t, h.srv.AddPrompt(server.Prompt{Name: "greet"}, func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
		return &server.GetPromptResult{Messages: []*server.PromptMessage{{Role: "user", Content: &server.TextContent{Text: "hello"}}}}, nil
	}))
	require.NoError(h.t, h.srv.AddResource(server.Resource{URI: "file:///readme.txt", Name: "readme"}, func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{{Text: "read me"}}}, nil
	}))
}

// start serves one session with ctx (which names the memory transport
// unless it names another); wrap, if not nil, wraps the server's end.
func (h *traced) start(ctx context.Context, wrap func(transport.Conn) transport.Conn) *traced {
	if mcpconv.TransportFromContext(ctx) == "" {
		ctx = mcpconv.ContextWithTransport(ctx, telemetry.TransportMemory)
	}
	opts := []mcptest.Option{mcptest.WithServeContext(ctx)}
	if wrap != nil {
		opts = append(opts, mcptest.WithServerConn(wrap))
	}
	h.Client = mcptest.Pipe(h.t, h.srv, opts...)
	return h
}

// close ends the session from the client's side and waits for Serve.
func (h *traced) close() {
	require.NoError(h.t, h.Close())
	_ = h.Wait()
}

func (h *traced) sessionID() string {
	ss := h.srv.Sessions()
	require.Len(h.t, ss, 1)
	return ss[0].ID()
}

// span returns the one ended span named name.
func (h *traced) span(name string) sdktrace.ReadOnlySpan {
	var found []sdktrace.ReadOnlySpan
	var names []string
	for _, s := range h.rec.Ended() {
		names = append(names, s.Name())
		if s.Name() == name {
			found = append(found, s)
		}
	}
	require.Len(h.t, found, 1, "spans named %q among %q", name, names)
	return found[0]
}

// spanAttrs returns a span's attributes as strings.
func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

// spanEvents formats a span's events as "name k=v k=v", attributes sorted.
func spanEvents(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		parts := []string{e.Name}
		var kvs []string
		for _, kv := range e.Attributes {
			kvs = append(kvs, string(kv.Key)+"="+kv.Value.String())
		}
		sort.Strings(kvs)
		out = append(out, strings.Join(append(parts, kvs...), " "))
	}
	return out
}

// with returns base plus more (more wins).
func withAttrs(base map[string]string, more map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(more))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// traceTimeout cancels the handler's context after d with
// server.ErrHandlerTimeout and answers with that cause, as a Timeout
// middleware does.
func traceTimeout(d time.Duration) server.Middleware {
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			ctx, cancel := context.WithTimeoutCause(ctx, d, server.ErrHandlerTimeout)
			defer cancel()
			res, err := next(ctx, req)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return res, err
		}
	}
}

// panicOn panics in the chain for one method.
func panicOn(method string) server.Middleware {
	return func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == method {
				panic("boom in " + method)
			}
			return next(ctx, req)
		}
	}
}

// Fixed span contexts: a client's span (sent in _meta) and an ambient one
// (an HTTP server span in the Serve context).
var (
	remoteSC = trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: mustTraceID("0af7651916cd43dd8448eb211c80319c"), SpanID: mustSpanID("b7ad6b7169203331"),
		TraceFlags: trace.FlagsSampled, Remote: true,
	})
	ambientSC = trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: mustTraceID("4bf92f3577b34da6a3ce929d0e0e4736"), SpanID: mustSpanID("00f067aa0ba902b7"),
		TraceFlags: trace.FlagsSampled,
	})
)

func traceparentOf(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

func mustTraceID(s string) trace.TraceID {
	id, err := trace.TraceIDFromHex(s)
	if err != nil {
		panic(err)
	}
	return id
}

func mustSpanID(s string) trace.SpanID {
	id, err := trace.SpanIDFromHex(s)
	if err != nil {
		panic(err)
	}
	return id
}
