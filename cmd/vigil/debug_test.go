package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry/otelsetup"
)

// The debug page is safe to leave on: a strict CSP on the page and its
// stylesheet, no script and no inline style, nosniff, everything escaped,
// the host guard on every path; and its views are plain URLs: sorting and
// filtering by link, JSON of each view.
func TestDebugPageSafeAndLinked(t *testing.T) {
	events := newEventLog()
	now := time.Now()
	for range 10 {
		events.stats.record("tools/call", "fast", true, slotOK, time.Millisecond, now)
		events.stats.record("tools/call", "slow", true, slotOK, 300*time.Millisecond, now)
	}
	events.stats.record("tools/call", `<img src=x onerror=alert(1)>`, true, slotToolError, time.Millisecond, now)
	page := &debugPage{srv: server.New(), in: &instruments{exporter: "none"}, events: events, ready: &atomic.Bool{}, started: now.Add(-time.Minute)}
	ts := httptest.NewServer(newObservabilityMux(&instruments{exporter: "none"}, &atomic.Bool{}, page, nil, nil))
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
	for _, path := range []string{"/debug/vigil", "/debug/vigil/style.css", "/debug/vigil/favicon.svg"} {
		resp, _ := get(path, "evil.example")
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, path)
	}

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
	ring := newSpanRing(defaultRingTraces)
	tp, _ := otelsetup.NewReceivingProvider(ring)
	tracer := tp.Tracer("bench")
	for i := range defaultRingTraces {
		_, span := tracer.Start(context.Background(), "tools/call echo", trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("mcp.session.id", "s"), attribute.Int("jsonrpc.request.id", i)))
		span.End()
	}
	events := newEventLog()
	now := time.Now()
	for _, tool := range []string{"echo", "sleep", "countdown", "convert_temperature"} {
		for range 1000 {
			events.stats.record("tools/call", tool, true, slotOK, time.Millisecond, now)
		}
	}
	page := &debugPage{srv: server.New(), in: &instruments{exporter: "ring", ring: ring, tracer: tp}, events: events, ready: &atomic.Bool{}, started: now}
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		page.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/vigil", nil))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}

// What needs attention: a cancellation's dropped response is told on its
// row, not apart; a timeout known only from its trace is listed as
// cancelled; slow means 100 ms or more, or 5 times the key's median; at
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
		{TraceID: "t6", Key: "tools/call echo", Class: "recent", DurationMS: 2},
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
	all := attentionOf(cancels, drops, links, "")
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
	assert.Len(t, attentionOf(cancels, drops, links, "cancelled"), 2)
	assert.Equal(t, []row{{"slow", "tools/call sleep", "", "t7"}, {"slow", "tools/call echo", "", "t6"}}, rows(attentionOf(cancels, drops, links, "slow")))

	var many []cancelEvent
	for i := range 2 * attentionPerKind {
		many = append(many, cancelEvent{Time: t0, SessionID: "s", RequestID: fmt.Sprint(100 + i), Method: "ping", Reason: "shutdown"})
	}
	assert.Len(t, attentionOf(many, nil, nil, ""), attentionPerKind)
	assert.Len(t, attentionOf(many, nil, nil, "cancelled"), 2*attentionPerKind)
}

// A 2026-07-28 stateless request in flight shows on the debug page with
// its era, next to a 2025 session.
func TestServiceDebugPageStatelessEra(t *testing.T) {
	svc := startService(t, "-http", "127.0.0.1:0")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	_, err := c.rpc(`1`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"era-test","version":"1"}}`)
	require.NoError(t, err)

	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1500},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest(http.MethodPost, svc.base+"/mcp", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "sleep")
	answered := make(chan error, 1)
	go func() {
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		answered <- err
	}()
	var snap debugSnapshot
	svcEventually(t, "the stateless sleep in flight", 10*time.Second, func() (bool, error) {
		var err error
		snap, err = svcDebug(hc, svc.base)
		return err == nil && len(snap.InFlight) == 1, err
	})
	eras := map[string]string{}
	for _, s := range snap.Sessions {
		eras[s.ID] = s.Era
	}
	assert.Equal(t, "2025 session", eras[c.session])
	assert.Equal(t, "2026 stateless", eras[snap.InFlight[0].SessionID])
	for _, s := range snap.Sessions {
		assert.Equal(t, "streamable_http", s.Transport, s.Era)
	}
	assert.Equal(t, "tools/call sleep", snap.InFlight[0].Key)
	require.NoError(t, <-answered)
}
