//go:build unix

package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadyzServing: /readyz means serving. A gateway whose required
// upstream is held at its first start (a FIFO it reads before it execs
// vigil -stdio; the next starts, a session's own, go straight on) answers 503 naming the upstream starting, and has made no
// readiness handshake; once the upstream is released, /readyz turns 200
// after vigil's own MCP handshake, which ran in process under the memory
// transport (one session, ended) and counts no Streamable HTTP session.
// Then a client's long call holds its connection open, and on SIGTERM
// /readyz turns 503 (draining) while the call is still unanswered; the
// call's end lets vigil exit.
func TestReadyzServing(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "start")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	svc := startService(t, "-http", "127.0.0.1:0", "-shutdown-grace", "60s",
		"-upstream", "e=sh -c '[ -e "+dir+"/started ] || { read x < "+fifo+"; : > "+dir+"/started; }; exec "+vigilBin+" -stdio'",
		"-upstream-sandbox", "e=none,read="+filepath.Dir(vigilBin)+",write="+dir)
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()

	assert.Equal(t, "upstream e: starting (sandbox none)\n", svcGet(t, hc, svc.base+"/readyz", http.StatusServiceUnavailable))
	active, ended := transportSessions(t, svcGet(t, hc, svc.base+"/metrics", http.StatusOK), "memory")
	assert.Zero(t, active+ended, "no handshake while the required upstream starts")

	release, err := os.OpenFile(fifo, os.O_RDWR, 0) // opens at once; the reader gets the line
	require.NoError(t, err)
	defer func() { _ = release.Close() }()
	_, err = release.WriteString("go\n")
	require.NoError(t, err)
	svcEventually(t, "/readyz 200", 30*time.Second, func() (bool, error) {
		resp, err := hc.Get(svc.base + "/readyz")
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	assert.Equal(t, "ready\nupstream e: ready (sandbox none)\n", svcGet(t, hc, svc.base+"/readyz", http.StatusOK))
	metrics := svcGet(t, hc, svc.base+"/metrics", http.StatusOK)
	active, ended = transportSessions(t, metrics, "memory")
	assert.Equal(t, []float64{0, 1}, []float64{active, ended}, "one handshake session, ended")
	active, ended = transportSessions(t, metrics, "streamable_http")
	assert.Equal(t, []float64{0, 0}, []float64{active, ended}, "the handshake is no client session")
	assert.True(t, svc.logs.waitFor("ready: the MCP handshake was answered", 10*time.Second), "the ready line, logged: %s", svc.logs.String())

	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	callCtx, cancelCall := context.WithCancel(t.Context())
	defer cancelCall()
	answered := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(callCtx, http.MethodPost, c.url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":600000}}}`))
		if err != nil {
			answered <- err
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := (&http.Client{}).Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		answered <- err
	}()
	require.NoError(t, waitInFlight(t.Context(), hc, svc.base+"/metrics", 1))

	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	svcEventually(t, "/readyz 503 after SIGTERM", 10*time.Second, func() (bool, error) {
		resp, err := hc.Get(svc.base + "/readyz")
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable, nil
	})
	assert.Equal(t, "draining\n", svcGet(t, hc, svc.base+"/readyz", http.StatusServiceUnavailable))
	select {
	case err := <-answered:
		t.Fatalf("the long call ended before the check: %v", err)
	default: // still open: /readyz turned 503 before its connection closed
	}
	cancelCall()
	require.Error(t, <-answered, "the call ends with its request cancelled, unanswered")
	require.NoError(t, svc.wait(30*time.Second))
}

// transportSessions returns the sessions active and ended on transport in
// the text of /metrics.
func transportSessions(t *testing.T, metrics, transport string) (active, ended float64) {
	t.Helper()
	sum := func(re string) float64 {
		var n float64
		for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(metrics, -1) {
			v, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			n += v
		}
		return n
	}
	label := `[^}]*transport="` + transport + `"[^}]*`
	return sum(`(?m)^mcp_server_sessions_active\{` + label + `\} (\S+)$`), sum(`(?m)^mcp_server_session_duration_seconds_count\{` + label + `\} (\S+)$`)
}
