package debugpage_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/internal/receiving"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// A 2026-07-28 tools/call cancelled by its client closing the request's
// stream is one row under "needs attention", with both the cancellation's
// detail and the request's trace (it was two rows: the event's, under the
// request's connection as if it were a session, and the trace's), even
// though an answered 2026-07-28 request of the same id came before it.
func TestStatelessCancelIsOneAttentionRow(t *testing.T) {
	rec := debugpage.NewRecorder()
	tp, shutdown := receiving.NewProvider(rec.SpanExporter().(receiving.SpanReceiver))
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	done := make(chan string, 2) // each tools/call, once its span ended
	inst, err := middleware.NewInstrumentation(
		// With tracing, metrics and a logger, the recorders run after the
		// span ended: the barrier after which the page has everything.
		middleware.WithRequestLog(slog.New(slog.DiscardHandler)),
		middleware.WithTracerProvider(tp),
		middleware.WithRegisterer(prometheus.NewRegistry()),
	)
	require.NoError(t, err)
	srv := server.New(append(inst.ServerOptions(), rec.ServerOption(), server.WithObserver(endObserver(func(req *server.Request) {
		if req.Method == "tools/call" {
			done <- req.Name
		}
	})))...)
	started := make(chan struct{}, 1)
	require.NoError(t, srv.AddTool(server.Tool{Name: "echo"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("echo"), nil
	}))
	require.NoError(t, srv.AddTool(server.Tool{Name: "wait"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}))
	endpoint := streamable.New(inst.ConnServer(srv, telemetry.TransportStreamableHTTP))
	mcp := httptest.NewServer(endpoint)
	t.Cleanup(mcp.Close)
	t.Cleanup(func() { _ = endpoint.Close() })
	page := httptest.NewServer(http.StripPrefix("/debug/vigil", debugpage.Handler(srv, rec)))
	t.Cleanup(page.Close)

	call := func(ctx context.Context, tool string) (*http.Response, error) {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcp.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
		return mcp.Client().Do(req)
	}
	resp, err := call(context.Background(), "echo")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "echo", <-done)

	ctx, cut := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		resp, err := call(ctx, "wait")
		if err == nil {
			_ = resp.Body.Close()
		}
		errs <- err
	}()
	<-started
	cut() // the client closes the request's stream
	require.Error(t, <-errs)
	require.Equal(t, "wait", <-done)

	res, err := page.Client().Get(page.URL + "/debug/vigil?format=json")
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	var view struct {
		Attention []struct {
			Kind      string `json:"kind"`
			Key       string `json:"key"`
			SessionID string `json:"session_id"`
			RequestID string `json:"request_id"`
			Detail    string `json:"detail"`
			TraceID   string `json:"trace_id"`
		} `json:"attention"`
		Traces []struct {
			TraceID string `json:"trace_id"`
			Key     string `json:"key"`
		} `json:"traces"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&view))
	require.Len(t, view.Attention, 1, "%+v", view.Attention)
	row := view.Attention[0]
	assert.Equal(t, "cancelled", row.Kind)
	assert.Equal(t, "tools/call wait", row.Key)
	assert.Empty(t, row.SessionID, "a 2026-07-28 request belongs to no session")
	assert.Equal(t, "1", row.RequestID)
	assert.NotEmpty(t, row.Detail, "the cancellation's cause")
	require.NotEmpty(t, row.TraceID)
	for _, tr := range view.Traces {
		if tr.TraceID == row.TraceID {
			assert.Equal(t, "tools/call wait", tr.Key, "the row links the cancelled request's own trace")
		}
	}
}
