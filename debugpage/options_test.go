package debugpage

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/release"
	"github.com/vigil-mcp/vigil/server"
)

// The ring's limits are the Recorder's options, or their defaults; the
// ring is made by the first SpanExporter call, once.
func TestRecorderOptions(t *testing.T) {
	rec := NewRecorder()
	assert.Nil(t, rec.traceRing(), "no ring before SpanExporter")
	ring := rec.SpanExporter()
	assert.Same(t, ring, rec.SpanExporter())
	assert.Equal(t, ringLimits{Recent: DefaultTraceRing, MaxBytes: ringMaxBytes}, rec.traceRing().lim)

	rec = NewRecorder(WithTraceRing(7, 64<<10))
	rec.SpanExporter()
	assert.Equal(t, ringLimits{Recent: 7, MaxBytes: 64 << 10}, rec.traceRing().lim)
	rec = NewRecorder(WithTraceRing(0, -1), nil)
	rec.SpanExporter()
	assert.Equal(t, ringLimits{Recent: 1, MaxBytes: ringMaxBytes}, rec.traceRing().lim, "at least one trace; a budget below 1 ignored")
}

// What the page tells about the process comes from the Handler's
// options: readiness, the service's name and version (Vigil's apart), where spans go (by default, whether the
// ring is in use), the sessions its memory bound counts, the metrics link.
func TestHandlerOptions(t *testing.T) {
	type view struct {
		Service  string      `json:"service"`
		Version  string      `json:"version"`
		Vigil    string      `json:"vigil_version"`
		Ready    bool        `json:"ready"`
		Exporter string      `json:"trace_exporter"`
		Kept     bool        `json:"traces_kept"`
		Memory   debugMemory `json:"memory"`
	}
	get := func(h http.Handler, path string) (*httptest.ResponseRecorder, view) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		var v view
		if strings.Contains(path, "format=json") {
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &v))
		}
		return w, v
	}

	rec := NewRecorder()
	page := mountPage(Handler(server.New(), rec))
	_, v := get(page, "/debug/vigil?format=json")
	assert.Equal(t, view{Service: "MCP server", Vigil: release.Version, Ready: true, Exporter: "none", Memory: v.Memory}, v)
	assert.Equal(t, eventsBoundBytes(0), v.Memory.EventsBound, "no session live")
	w, _ := get(page, "/debug/vigil")
	assert.NotContains(t, w.Body.String(), "/metrics")
	assert.Contains(t, w.Body.String(), "<title>MCP server</title>")
	assert.Contains(t, w.Body.String(), "<h1>MCP server</h1>")
	assert.Contains(t, w.Body.String(), "Vigil "+release.Version+" ·", "Vigil's version, apart")
	assert.Contains(t, w.Body.String(), `<span class="ok">ready</span>`)
	rec.SpanExporter()
	_, v = get(page, "/debug/vigil?format=json")
	assert.Equal(t, "in-memory ring", v.Exporter)
	assert.True(t, v.Kept)
	assert.Positive(t, v.Memory.RingBound)

	page = mountPage(Handler(server.New(), NewRecorder(), WithService("notes", "1.2.3"), WithReadiness(func() error { return errors.New("draining") }),
		WithTraceExporter("otlp"), WithMetricsLink("/custom/metrics"), nil))
	_, v = get(page, "/debug/vigil?format=json")
	assert.Equal(t, view{Service: "notes", Version: "1.2.3", Vigil: release.Version, Exporter: "otlp", Memory: v.Memory}, v)
	w, _ = get(page, "/debug/vigil")
	assert.Contains(t, w.Body.String(), "<title>notes 1.2.3</title>", "the page's title names the service")
	assert.Contains(t, w.Body.String(), "<h1>notes 1.2.3</h1>")
	assert.Contains(t, w.Body.String(), "Vigil "+release.Version+" ·", "Vigil's version, apart")
	assert.Contains(t, w.Body.String(), `<span class="warn">draining</span>`)
	assert.Contains(t, w.Body.String(), `<a href="/custom/metrics">/custom/metrics</a>`)
	assert.Contains(t, w.Body.String(), "Spans go to otlp; they are not kept here.")
}

// The handler serves its paths relative to where it is mounted, its links
// starting with the prefix stripped (none at the root), to GET and HEAD
// only.
func TestHandlerPaths(t *testing.T) {
	h := Handler(server.New(), NewRecorder())
	serve := func(method, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}
	page := serve(http.MethodGet, "/")
	require.Equal(t, http.StatusOK, page.Code)
	assert.Contains(t, page.Body.String(), `<link rel="stylesheet" href="/style.css">`)
	assert.Contains(t, page.Body.String(), `href="?outcome=error"`)
	assert.Equal(t, http.StatusOK, serve(http.MethodHead, "/").Code)
	assert.Equal(t, http.StatusOK, serve(http.MethodGet, "/style.css").Code)
	assert.Equal(t, "image/svg+xml", serve(http.MethodGet, "/favicon.svg").Header().Get("Content-Type"))
	for _, path := range []string{"/other", "/trace/", "/trace/a/b", "/style.css/x"} {
		assert.Equal(t, http.StatusNotFound, serve(http.MethodGet, path).Code, path)
	}
	post := serve(http.MethodPost, "/")
	assert.Equal(t, http.StatusMethodNotAllowed, post.Code)
	assert.Equal(t, "GET, HEAD", post.Header().Get("Allow"))

	mux := http.NewServeMux()
	mux.Handle("/admin/live/", http.StripPrefix("/admin/live", h))
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/admin/live/?refresh=0", nil))
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `<link rel="stylesheet" href="/admin/live/style.css">`)
	assert.Contains(t, w.Body.String(), `href="/admin/live?outcome=error&amp;refresh=0"`)
}

// WithStatus's lines are in the page's header and its JSON's status,
// escaped; without it there is none.
func TestStatusLines(t *testing.T) {
	get := func(h http.Handler, path string) string {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Body.String()
	}
	lines := []string{"upstream a: ready", "upstream <b>: failing, next start in 2 s"}
	page := mountPage(Handler(server.New(), NewRecorder(), WithStatus(func() []string { return lines })))
	var v struct {
		Status []string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(get(page, "/debug/vigil?format=json")), &v))
	assert.Equal(t, lines, v.Status)
	html := get(page, "/debug/vigil")
	assert.Contains(t, html, `<div class="status">upstream a: ready</div>`)
	assert.Contains(t, html, `<div class="status">upstream &lt;b&gt;: failing, next start in 2 s</div>`)

	plain := mountPage(Handler(server.New(), NewRecorder()))
	assert.NotContains(t, get(plain, "/debug/vigil?format=json"), `"status"`)
	assert.NotContains(t, get(plain, "/debug/vigil"), `<div class="status">`)
}
