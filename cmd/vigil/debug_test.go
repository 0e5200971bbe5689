package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/debugpage"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/telemetry/otelsetup"
)

// Every path of the debug page as vigil mounts it (the page, a trace view,
// its stylesheet and icons) refuses a Host that is not a loopback name on
// a loopback listener, against DNS rebinding, and serves it otherwise.
func TestDebugPageHostGuard(t *testing.T) {
	rec := debugpage.NewRecorder()
	tp, shutdown := otelsetup.NewReceivingProvider(rec.SpanReceiver())
	t.Cleanup(func() { require.NoError(t, shutdown(context.Background())) })
	_, span := tp.Tracer("guard-test").Start(context.Background(), "ping")
	span.End()
	page := debugpage.Handler(server.New(), rec)
	ts := httptest.NewServer(newObservabilityMux(&instruments{exporter: "none"}, &atomic.Bool{}, page, nil))
	defer ts.Close()

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
