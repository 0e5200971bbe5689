package vigil_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil"
	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/internal/receiving"
)

// Every path of the live page as the admin handler mounts it (the page, a trace view,
// its stylesheet and icons) refuses a Host that is not a loopback name on
// a loopback listener, against DNS rebinding, and serves it otherwise.
func TestDebugPageHostGuard(t *testing.T) {
	rec := debugpage.NewRecorder()
	tp, shutdown := receiving.NewProvider(rec.SpanExporter().(receiving.SpanReceiver))
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	_, span := tp.Tracer("guard-test").Start(context.Background(), "ping")
	span.End()
	svc := vigil.New("t", "1", vigil.WithPage(rec), vigil.WithTracerProvider(tp))
	ts := httptest.NewServer(svc.AdminHandler())
	defer ts.Close()
	defer func() { require.NoError(t, svc.Shutdown(context.Background())) }()

	get := func(path, host string) *http.Response {
		req, err := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		require.NoError(t, err)
		if host != "" {
			req.Host = host
		}
		client := *ts.Client()
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp
	}
	paths := []string{
		"/debug/vigil", "/debug/vigil/style.css", "/debug/vigil/favicon.svg", "/favicon.ico",
		"/debug/vigil/trace/" + span.SpanContext().TraceID().String(),
	}
	for _, path := range paths {
		assert.Equal(t, http.StatusOK, get(path, "").StatusCode, path)
		for _, host := range []string{"evil.example", "rebound.example"} {
			assert.Equal(t, http.StatusForbidden, get(path, host).StatusCode, "%s from %s", path, host)
		}
	}
	icon := get("/favicon.ico", "localhost")
	assert.Equal(t, "image/svg+xml", icon.Header.Get("Content-Type"), "the page's icon")
	root := get("/", "localhost")
	assert.Equal(t, http.StatusFound, root.StatusCode)
	assert.Equal(t, "/debug/vigil", root.Header.Get("Location"))
	assert.Equal(t, http.StatusNotFound, get("/debug/vigil/other", "localhost").StatusCode)
}

// WithReadinessDetail's lines follow "ready" in /readyz's 200 answer;
// while the WithReadiness check fails, the answer is 503 with its text.
func TestReadinessDetail(t *testing.T) {
	var failing atomic.Bool
	svc := vigil.New("t", "1", vigil.WithReadiness(func() error {
		if failing.Load() {
			return errors.New("upstream a: failing, next start in 2 s")
		}
		return nil
	}),
		vigil.WithReadinessDetail(func() string { return "upstream a: ready\nupstream b: starting (not required)\n" }))
	ts := httptest.NewServer(svc.AdminHandler())
	defer ts.Close()
	defer func() { require.NoError(t, svc.Shutdown(context.Background())) }()
	readyz := func() (int, string) {
		resp, err := ts.Client().Get(ts.URL + "/readyz")
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	status, body := readyz()
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ready\nupstream a: ready\nupstream b: starting (not required)\n", body)
	failing.Store(true)
	status, body = readyz()
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, "upstream a: failing, next start in 2 s\n", body)
}

// TestAdminHandler: a handler given with WithAdminHandler is served among
// the admin endpoints, behind their Host check.
func TestAdminHandler(t *testing.T) {
	svc := vigil.New("t", "1", vigil.WithAdminHandler("GET /admin/x", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("x"))
	})))
	ts := httptest.NewServer(svc.AdminHandler())
	defer ts.Close()
	defer func() { require.NoError(t, svc.Shutdown(context.Background())) }()
	for host, want := range map[string]int{"": http.StatusOK, "evil.example": http.StatusForbidden} {
		req, err := http.NewRequest(http.MethodGet, ts.URL+"/admin/x", nil)
		require.NoError(t, err)
		if host != "" {
			req.Host = host
		}
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, want, resp.StatusCode, host)
	}
}
