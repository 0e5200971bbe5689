package debugpage

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/internal/receiving"
	"github.com/vigil-mcp/vigil/server"
)

// The debug page is safe to leave on: a strict CSP on the page and its
// stylesheet, no script and no inline style, nosniff, everything escaped
// (cmd/vigil's tests check its host guard on every path); and its views
// are plain URLs: sorting and filtering by link, JSON of each view.
func TestDebugPageSafeAndLinked(t *testing.T) {
	rec := NewRecorder()
	events := rec.events
	now := time.Now()
	for range 10 {
		events.stats.record("tools/call", "fast", true, slotOK, time.Millisecond, now)
		events.stats.record("tools/call", "slow", true, slotOK, 300*time.Millisecond, now)
	}
	events.stats.record("tools/call", `<img src=x onerror=alert(1)>`, true, slotToolError, time.Millisecond, now)
	ts := httptest.NewServer(mountPage(Handler(server.New(), rec, WithTraceExporter("none"))))
	defer ts.Close()

	get := func(path string, host string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		require.NoError(t, err)
		if host != "" {
			req.Host = host
		}
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	resp, html := get("/debug/vigil?refresh=0", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, debugCSP(), resp.Header.Get("Content-Security-Policy"))
	assert.Contains(t, debugCSP(), "default-src 'none'")
	assert.NotContains(t, debugCSP(), "unsafe-inline")
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	assert.NotContains(t, html, "<script")
	assert.NotContains(t, html, " style=")
	assert.NotContains(t, html, "<style")
	assert.NotContains(t, html, "<img")
	assert.Contains(t, html, "tools/call &lt;img src=x onerror=alert(1)&gt;")
	assert.Contains(t, html, `<link rel="stylesheet" href="/debug/vigil/style.css">`)
	assert.Contains(t, html, `href="/debug/vigil?refresh=0&amp;sort=p99"`)
	assert.Equal(t, 3, strings.Count(html, `<svg class="chart"`))

	resp, css := get("/debug/vigil/style.css", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/css; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	assert.Equal(t, debugCSS, css)
	resp, _ = get("/debug/vigil/favicon.svg", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	view := func(query string) debugSnapshot {
		resp, body := get("/debug/vigil?format=json&"+query, "")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, debugCSP(), resp.Header.Get("Content-Security-Policy"))
		var snap debugSnapshot
		require.NoError(t, json.Unmarshal([]byte(body), &snap))
		return snap
	}
	keys := func(snap debugSnapshot) []string {
		var out []string
		for _, r := range snap.Stats {
			out = append(out, r.Key)
		}
		return out
	}
	assert.Equal(t, []string{"tools/call <img src=x onerror=alert(1)>", "tools/call fast", "tools/call slow"}, keys(view("")))
	assert.Equal(t, []string{"tools/call slow", "tools/call <img src=x onerror=alert(1)>", "tools/call fast"}, keys(view("sort=p99")))
	assert.Equal(t, []string{"tools/call <img src=x onerror=alert(1)>", "tools/call fast", "tools/call slow"}, keys(view("sort=errors")))
	assert.Equal(t, []string{"tools/call fast"}, keys(view("key=tools/call+fast")))
	snap := view("key=tools/call+slow&outcome=cancelled&session=nope")
	assert.Equal(t, debugFilter{Session: "nope", Key: "tools/call slow", Outcome: "cancelled", Sort: "key"}, snap.Filter)
	slow := snap.Stats[0]
	assert.Equal(t, uint64(10), slow.Minute.Requests)
	assert.InDelta(t, 300, slow.Minute.P50MS, 100)
	assert.Positive(t, snap.Memory.StatsBound)
	assert.Equal(t, snap.Memory.StatsBound+snap.Memory.EventsBound, snap.Memory.Total)
}

// BenchmarkDebugPage renders the page (HTML, refreshed by a browser) with
// a full trace ring and a few keys: what an open page costs vigil every
// refresh.
func BenchmarkDebugPage(b *testing.B) {
	rec := NewRecorder()
	tp, _ := receiving.NewProvider(rec.SpanExporter().(receiving.SpanReceiver))
	tracer := tp.Tracer("bench")
	for i := range DefaultTraceRing {
		_, span := tracer.Start(context.Background(), "tools/call echo", trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("mcp.session.id", "s"), attribute.Int("jsonrpc.request.id", i)))
		span.End()
	}
	now := time.Now()
	for _, tool := range []string{"echo", "sleep", "countdown", "convert_temperature"} {
		for range 1000 {
			rec.events.stats.record("tools/call", tool, true, slotOK, time.Millisecond, now)
		}
	}
	page := mountPage(Handler(server.New(), rec, WithTraceExporter("ring")))
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		page.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/vigil", nil))
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
}

// What needs attention: a cancellation's dropped response is told on its
// row, not apart; a timeout known only from its trace is listed as
// cancelled; slow means 100 ms or more, or 5 times the key's median (of
// 5 traces at least) and 10 ms or more; at
// most attentionPerKind of a kind unfiltered, all of one kind with
// ?outcome=.
func TestAttentionOf(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	cancels := []cancelEvent{{Time: t0, SessionID: "s", RequestID: "1", Method: "tools/call", Name: "sleep", Reason: "client_cancel", Cause: "bye"}}
	drops := []dropEvent{
		{Time: t0, SessionID: "s", RequestID: "1", Method: "tools/call", Name: "sleep", Reason: "cancelled"},
		{Time: t0, SessionID: "s", RequestID: "9", Method: "tools/call", Name: "echo", Reason: "peer_gone"},
	}
	links := []traceLink{
		{TraceID: "t1", Key: "tools/call sleep", Class: "cancelled", Reason: "client_cancel", SessionID: "s", RequestID: "1", Start: t0},
		{TraceID: "t2", Key: "tools/call sleep", Class: "cancelled", Reason: "timeout", Detail: "request timed out", SessionID: "s", RequestID: "2", Start: t0.Add(time.Second), DurationMS: 1000},
		{TraceID: "t3", Key: "tools/call echo", Class: "error", Reason: "tool_error", SessionID: "s", RequestID: "3", Start: t0},
		{TraceID: "t4", Key: "tools/call echo", Class: "recent", DurationMS: 0.1},
		{TraceID: "t5", Key: "tools/call echo", Class: "recent", DurationMS: 0.1},
		{TraceID: "t5a", Key: "tools/call echo", Class: "recent", DurationMS: 0.1},
		{TraceID: "t5b", Key: "tools/call echo", Class: "recent", DurationMS: 0.1},
		{TraceID: "t6", Key: "tools/call echo", Class: "recent", DurationMS: 20},
		{TraceID: "t7", Key: "tools/call sleep", Class: "recent", DurationMS: 300},
	}
	type row struct{ kind, key, reason, trace string }
	rows := func(as []attention) []row {
		var out []row
		for _, a := range as {
			out = append(out, row{a.Kind, a.Key, a.Reason, a.TraceID})
		}
		return out
	}
	all := attentionOf("/debug/vigil", cancels, drops, links, "")
	assert.Equal(t, []row{
		{"error", "tools/call echo", "tool_error", "t3"},
		{"cancelled", "tools/call sleep", "timeout", "t2"},
		{"cancelled", "tools/call sleep", "client_cancel", "t1"},
		{"dropped", "tools/call echo", "peer_gone", ""},
		{"slow", "tools/call sleep", "", "t7"},
		{"slow", "tools/call echo", "", "t6"},
	}, rows(all))
	assert.Equal(t, "bye · response dropped: cancelled", all[2].Detail)
	assert.Equal(t, "/debug/vigil/trace/t1", all[2].TraceURL)
	assert.Len(t, attentionOf("/debug/vigil", cancels, drops, links, "cancelled"), 2)
	assert.Equal(t, []row{{"slow", "tools/call sleep", "", "t7"}, {"slow", "tools/call echo", "", "t6"}}, rows(attentionOf("/debug/vigil", cancels, drops, links, "slow")))

	// No "slow" below the floor, nor from a median of too few: neither a
	// 1.3 ms initialize beside two quicker ones, nor a sub-millisecond
	// request however quick the others.
	floor := []traceLink{
		{TraceID: "i1", Key: "initialize", Class: "recent", DurationMS: 0.05},
		{TraceID: "i2", Key: "initialize", Class: "recent", DurationMS: 0.05},
		{TraceID: "i3", Key: "initialize", Class: "recent", DurationMS: 1.3},
		{TraceID: "few", Key: "tools/call few", Class: "recent", DurationMS: 0.1},
		{TraceID: "few2", Key: "tools/call few", Class: "recent", DurationMS: 50},
	}
	for i := range 20 {
		floor = append(floor, traceLink{TraceID: fmt.Sprint("p", i), Key: "ping", Class: "recent", DurationMS: 0.001})
	}
	floor = append(floor,
		traceLink{TraceID: "sub-ms", Key: "ping", Class: "recent", DurationMS: 0.9},
		traceLink{TraceID: "9ms", Key: "ping", Class: "recent", DurationMS: 9.9},
		traceLink{TraceID: "12ms", Key: "ping", Class: "recent", DurationMS: 12},
	)
	assert.Equal(t, []row{{"slow", "ping", "", "12ms"}}, rows(attentionOf("/debug/vigil", nil, nil, floor, "slow")))

	var many []cancelEvent
	for i := range 2 * attentionPerKind {
		many = append(many, cancelEvent{Time: t0, SessionID: "s", RequestID: fmt.Sprint(100 + i), Method: "ping", Reason: "shutdown"})
	}
	assert.Len(t, attentionOf("/debug/vigil", many, nil, nil, ""), attentionPerKind)
	assert.Len(t, attentionOf("/debug/vigil", many, nil, nil, "cancelled"), 2*attentionPerKind)
}

// Requests of no session may share an id: each cancellation is paired
// with the trace that started first after its receipt, never one from
// before it, and a trace paired is not listed again on its own.
func TestAttentionPairsStatelessRequestsByReceipt(t *testing.T) {
	t0 := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	cancels := []cancelEvent{
		{Time: t0.Add(time.Second), RequestID: "1", Method: "tools/call", Name: "sleep", Reason: "transport_close", Cause: "a", Stateless: true, received: t0},
		{Time: t0.Add(3 * time.Second), RequestID: "1", Method: "tools/call", Name: "sleep", Reason: "transport_close", Cause: "b", Stateless: true, received: t0.Add(2 * time.Second)},
		{Time: t0.Add(5 * time.Second), RequestID: "1", Method: "tools/call", Name: "sleep", Reason: "transport_close", Cause: "c", Stateless: true, received: t0.Add(4 * time.Second)},
	}
	links := []traceLink{
		{TraceID: "tb", Key: "tools/call sleep", Class: "cancelled", Reason: "transport_close", RequestID: "1", Start: t0.Add(2*time.Second + time.Millisecond)},
		{TraceID: "ta", Key: "tools/call sleep", Class: "cancelled", Reason: "transport_close", RequestID: "1", Start: t0.Add(time.Millisecond)},
		{TraceID: "tx", Key: "tools/call echo", Class: "recent", RequestID: "1", Start: t0.Add(4*time.Second + time.Millisecond)},
	}
	got := map[string]string{}
	for _, a := range attentionOf("/debug/vigil", cancels, nil, links, "cancelled") {
		require.Equal(t, "cancelled", a.Kind)
		got[a.Detail] = a.TraceID
	}
	assert.Equal(t, map[string]string{"a": "ta", "b": "tb", "c": ""}, got, "c's trace is not kept; echo's is another request's")
}
