package middleware_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// TestTracingAmbientSpanIsThePOSTs checks, over real Streamable HTTP with
// an HTTP server span around every POST, that the ambient span of a
// request in a 2025 session is that of the POST that carried it, not that
// of the initialize POST the session's context came from: the parent
// without _meta, the link with it.
func TestTracingAmbientSpanIsThePOSTs(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	srv := server.New(server.WithMiddleware(middleware.Tracing(
		middleware.WithTracerProvider(tp), middleware.WithPropagators(traceTestPropagator()))))
	require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("ok"), nil
	}))
	mcp := streamable.New(srv)
	defer func() { _ = mcp.Close() }()
	// httpSpans[i] is the server span of the i-th POST, like otelhttp's.
	var httpSpans []trace.SpanContext
	httpTracer := tp.Tracer("http")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := httpTracer.Start(r.Context(), "HTTP POST", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		httpSpans = append(httpSpans, span.SpanContext()) // one request at a time
		mcp.ServeHTTP(w, r.WithContext(ctx))
	}))
	defer ts.Close()

	sid := ""
	post := func(body string) {
		req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		require.Less(t, resp.StatusCode, 300, body)
		if sid == "" {
			sid = resp.Header.Get("Mcp-Session-Id")
		}
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"traceparent":"` + traceparentOf(remoteSC) + `"}}}`)
	require.Len(t, httpSpans, 4)

	byID := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.Name() == "tools/call echo" || s.Name() == "notifications/initialized" {
			byID[spanAttrs(s)["jsonrpc.request.id"]] = s
		}
	}
	initialized, plain, withMeta := byID[""], byID["2"], byID["3"]
	require.NotNil(t, initialized)
	require.NotNil(t, plain)
	require.NotNil(t, withMeta)

	assert.Equal(t, httpSpans[1].SpanID(), initialized.Parent().SpanID(), "a notification's parent is its own POST's span")
	assert.Equal(t, httpSpans[2].SpanID(), plain.Parent().SpanID(), "without _meta, the parent is the POST's span")
	assert.NotEqual(t, httpSpans[0].SpanID(), plain.Parent().SpanID(), "not the initialize POST's span")
	assert.Empty(t, plain.Links())

	assert.Equal(t, remoteSC.SpanID(), withMeta.Parent().SpanID(), "with _meta, the parent is the client's span")
	require.Len(t, withMeta.Links(), 1)
	assert.Equal(t, httpSpans[3].SpanID(), withMeta.Links()[0].SpanContext.SpanID(), "and the POST's span a link")
	assert.Equal(t, sid, spanAttrs(plain)["mcp.session.id"])
}

// TestTracingHTTPPeer checks that, with streamable.ConnContext as the HTTP
// server's ConnContext, the span of a message sent over Streamable HTTP
// names the client by its connection (client.address, client.port, never
// the X-Forwarded-For the client wrote) and the HTTP version, and that a
// server without it records no client address.
func TestTracingHTTPPeer(t *testing.T) {
	t.Parallel()
	for _, withPeer := range []bool{true, false} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		srv := server.New(server.WithMiddleware(middleware.Tracing(middleware.WithTracerProvider(tp))))
		require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("ok"), nil
		}))
		mcp := streamable.New(srv)
		ts := httptest.NewUnstartedServer(mcp)
		if withPeer {
			ts.Config.ConnContext = streamable.ConnContext
		}
		ts.Start()
		var clientPort string
		client := ts.Client()
		client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err == nil {
				_, clientPort, _ = net.SplitHostPort(c.LocalAddr().String())
			}
			return c, err
		}
		req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		ts.Close()
		_ = mcp.Close()

		spans := rec.Ended()
		require.Len(t, spans, 1)
		attrs := spanAttrs(spans[0])
		assert.Equal(t, "tcp", attrs["network.transport"])
		assert.Equal(t, "http", attrs["network.protocol.name"])
		if !withPeer {
			assert.NotContains(t, attrs, "client.address")
			assert.NotContains(t, attrs, "network.protocol.version")
			continue
		}
		assert.Equal(t, "127.0.0.1", attrs["client.address"], "the connection's address, not X-Forwarded-For")
		assert.Equal(t, clientPort, attrs["client.port"])
		assert.NotEmpty(t, clientPort)
		assert.Equal(t, "1.1", attrs["network.protocol.version"])
	}
}
