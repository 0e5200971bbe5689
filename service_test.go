package vigil_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// logTap is a slog handler that keeps every record and hands the url of
// "serving MCP" and "serving admin endpoints" to the test, once each.
type logTap struct {
	mu      sync.Mutex
	records []slog.Record
	mcp     chan string
	admin   chan string
}

func newLogTap() *logTap {
	return &logTap{mcp: make(chan string, 1), admin: make(chan string, 1)}
}

func (h *logTap) Enabled(context.Context, slog.Level) bool { return true }
func (h *logTap) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logTap) WithGroup(string) slog.Handler            { return h }

func (h *logTap) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	var url string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "url" {
			url = a.Value.String()
		}
		return true
	})
	switch r.Message {
	case "serving MCP":
		h.mcp <- url
	case "serving admin endpoints":
		h.admin <- url
	}
	return nil
}

// attrsOf returns the attributes of the first record with message msg.
func (h *logTap) attrsOf(msg string) map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.Message != msg {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.String()
			return true
		})
		return attrs
	}
	return nil
}

type forecastIn struct {
	City string `json:"city"`
}

// A user's service made with vigil.New and served with ListenAndServe
// shows one tool call on the live page, in /metrics and in a span; the
// line the tool logs carries the span's trace id; and canceling the
// context stops it, leaving no goroutine behind (goleak, TestMain).
func TestServiceShowsAToolCall(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	logs := newLogTap()
	svc := vigil.New("weather", "1.0.0", vigil.WithTracerProvider(tp), vigil.WithLogger(slog.New(logs)))
	require.NoError(t, svc.Err())
	err := server.AddTypedTool(svc.Server, server.Tool{Name: "forecast"},
		func(ctx context.Context, _ *server.CallToolRequest, in forecastIn) (string, error) {
			svc.Logger.InfoContext(ctx, "looking up", "city", in.City)
			return "sunny in " + in.City, nil
		})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- svc.ListenAndServe(ctx, "127.0.0.1:0", "127.0.0.1:0") }()
	admin := <-logs.admin
	mcpURL := <-logs.mcp

	c := mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: mcpURL}))
	c.Initialize("2025-11-25", map[string]any{})
	res := c.CallTool("forecast", map[string]any{"city": "Lyon"})
	require.False(t, res.IsError, res.Text())
	assert.Equal(t, "sunny in Lyon", res.Text())

	// The live page.
	var view struct {
		Stats []struct {
			Key   string `json:"key"`
			Total struct {
				Requests uint64 `json:"requests"`
			} `json:"since_start"`
		} `json:"stats"`
	}
	require.NoError(t, json.Unmarshal(get(t, admin+"/debug/vigil?format=json", http.StatusOK), &view))
	calls := map[string]uint64{}
	for _, row := range view.Stats {
		calls[row.Key] = row.Total.Requests
	}
	assert.Equal(t, uint64(1), calls["tools/call forecast"], "the page's row of the tool: %v", calls)

	// /metrics, flushed before the scrape.
	metrics := string(get(t, admin+"/metrics", http.StatusOK))
	assert.Regexp(t, `(?m)^mcp_server_operation_duration_seconds_count\{[^}]*gen_ai_tool_name="forecast"[^}]*\} 1$`, metrics)

	// The span, and the trace id in the tool's log line.
	var call sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "tools/call forecast" {
			call = s
		}
	}
	require.NotNil(t, call, "the call's span")
	line := logs.attrsOf("looking up")
	require.NotNil(t, line, "the tool's log line")
	assert.Equal(t, call.SpanContext().TraceID().String(), line["trace_id"])
	assert.Equal(t, "Lyon", line["city"])

	assert.Equal(t, "ready\n", string(get(t, admin+"/readyz", http.StatusOK)))
	assert.Equal(t, "ok\n", string(get(t, admin+"/healthz", http.StatusOK)))

	cancel()
	require.NoError(t, <-served)
	assert.NotNil(t, logs.attrsOf("stopped"), "ListenAndServe returned after its shutdown")
}

// get returns the body of url, which must answer status.
func get(t *testing.T, url string, status int) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, status, resp.StatusCode, "%s: %s", url, body)
	return body
}

// ListenAndServe refuses an address other than loopback unless told, and
// then one without an admin listener of its own, or without a front and
// Host names; it listens on nothing.
func TestListenAndServeRefusesAPublicAddress(t *testing.T) {
	for _, tt := range []struct {
		name, mcp, admin string
		opts             []vigil.Option
		want             string
	}{
		{name: "every address", mcp: "0.0.0.0:0", admin: "127.0.0.1:0", want: "WithAllowPublic"},
		{name: "empty host", mcp: ":0", admin: "127.0.0.1:0", want: "not a loopback address"},
		{name: "allowed, admin beside /mcp", mcp: "0.0.0.0:0", opts: []vigil.Option{vigil.WithAllowPublic()}, want: "admin address of their own"},
		{name: "allowed, no front nor hosts", mcp: "0.0.0.0:0", admin: "127.0.0.1:0", opts: []vigil.Option{vigil.WithAllowPublic()}, want: "WithAllowedHosts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			svc := vigil.New("t", "1", append(tt.opts, vigil.WithPage(nil))...)
			require.ErrorContains(t, svc.ListenAndServe(t.Context(), tt.mcp, tt.admin), tt.want)
			require.NoError(t, svc.Shutdown(t.Context()))
		})
	}
}

// On cancel, ListenAndServe drains in order: /readyz turns 503 at once
// while the call in flight runs on within the grace and is answered, and
// it returns nil once everything has stopped.
func TestListenAndServeDrainsOnCancel(t *testing.T) {
	logs := newLogTap()
	svc := vigil.New("slow", "1.0.0", vigil.WithLogger(slog.New(logs)), vigil.WithPage(nil))
	started, release := make(chan struct{}), make(chan struct{})
	err := server.AddTypedTool(svc.Server, server.Tool{Name: "wait"},
		func(ctx context.Context, _ *server.CallToolRequest, _ struct{}) (string, error) {
			close(started)
			select {
			case <-release:
				return "released", nil
			case <-ctx.Done():
				return "", context.Cause(ctx)
			}
		})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- svc.ListenAndServe(ctx, "127.0.0.1:0", "127.0.0.1:0") }()
	admin := <-logs.admin
	mcpURL := <-logs.mcp

	conn := streamable.Dial(streamable.ClientConfig{URL: mcpURL})
	mcptest.NewClient(t, conn).Initialize("2025-11-25", map[string]any{})
	answer := make(chan string, 1)
	go func() {
		answer <- post(mcpURL, conn.(interface{ SessionID() string }).SessionID(), `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
	}()
	<-started
	cancel()
	require.Eventually(t, func() bool {
		resp, err := http.Get(admin + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}, 10*time.Second, 5*time.Millisecond, "/readyz turns 503 while the call drains")
	select {
	case err := <-served:
		t.Fatalf("ListenAndServe returned with a call in flight: %v", err)
	default:
	}
	close(release)
	assert.Contains(t, <-answer, `"text":"released"`, "the call in flight is answered within the grace")
	require.NoError(t, <-served)
	assert.NotNil(t, logs.attrsOf("shutting down"))
}

// post sends the JSON-RPC message body in the 2025 session id at url, and
// returns the answer's body, or the error's text.
func post(url, session, body string) string {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
