package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/upstreamspec"
	"github.com/vigil-mcp/vigil/server"
)

// adminExposedWarning starts the warning vigil logs for an admin listener
// beyond loopback.
const adminExposedWarning = "the admin listener is reachable beyond this host, with no authorization: "

// An admin listener beyond loopback is served, with a warning that says
// what it exposes and that it must be firewalled.
func TestServiceAdminListenerExposedWarns(t *testing.T) {
	svc := startService(t, "-http", "127.0.0.1:0", "-admin-http", "0.0.0.0:0")
	logs := svc.logs.String()
	m := regexp.MustCompile(`level=WARN msg="` + regexp.QuoteMeta(adminExposedWarning) + `[^"]*" addr=(\S+)`).FindStringSubmatch(logs)
	require.NotNil(t, m, "the warning, before the MCP URL:\n%s", logs)
	assert.Contains(t, logs, `msg="serving admin endpoints" url=http://`+m[1]+" ", "it names the listener")
	assert.Contains(t, logs, "loopback_only=false")
	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, svc.wait(15*time.Second), "exit status 0 after SIGTERM")
}

// With -admin-http, the observability endpoints are served on the admin
// listener only, and the MCP listener serves only /mcp; SIGTERM stops both.
// The -audit-log file gets the tools/call, flushed at exit.
func TestServiceAdminListener(t *testing.T) {
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	svc := startService(t, "-http", "127.0.0.1:0", "-admin-http", "127.0.0.1:0", "-audit-log", auditPath)
	m := regexp.MustCompile(`msg="serving admin endpoints" url=(\S+)`).FindStringSubmatch(svc.logs.String())
	require.NotNil(t, m, "the admin URL is logged before the MCP URL:\n%s", svc.logs.String())
	admin := m[1]
	require.NotEqual(t, svc.base, admin)
	assert.NotContains(t, svc.logs.String(), adminExposedWarning, "a loopback admin listener is no warning")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()

	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/debug/vigil", "/"} {
		svcGet(t, hc, svc.base+path, http.StatusNotFound)
		svcGet(t, hc, admin+path, http.StatusOK)
	}
	svcGet(t, hc, admin+"/mcp", http.StatusNotFound)
	assert.Contains(t, svcGet(t, hc, admin+"/metrics", http.StatusOK), "mcp_server_sessions_active")

	// The MCP listener still serves MCP.
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	res, err := c.rpc(`1`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"admin-test","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, res.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	echo, err := c.rpc(`2`, "tools/call", `{"name":"echo","arguments":{"text":"not for the audit log"}}`)
	require.NoError(t, err)
	require.Nil(t, echo.Error)

	// The admin listener keeps the DNS-rebinding guard.
	req, err := http.NewRequest(http.MethodGet, admin+"/metrics", nil)
	require.NoError(t, err)
	req.Host = "evil.example"
	resp, err := hc.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	hc.CloseIdleConnections()
	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, svc.wait(15*time.Second), "exit status 0 after SIGTERM")
	_, err = net.DialTimeout("tcp", strings.TrimPrefix(admin, "http://"), 5*time.Second)
	require.Error(t, err, "the admin listener is closed")

	audit, err := os.ReadFile(auditPath)
	require.NoError(t, err)
	assert.NotContains(t, string(audit), "not for the audit log")
	var line map[string]any
	require.NoError(t, json.Unmarshal(audit, &line), "one line: %s", audit)
	assert.Equal(t, "echo", line["tool"])
	assert.Equal(t, "ok", line["outcome"])
	assert.Equal(t, []any{"text"}, line["arguments"])
	assert.NotEmpty(t, line["session_id"])
	assert.NotContains(t, line, "subject", "no authorization")
}

// -allow-unauthenticated (with -allowed-hosts and -admin-http) lets vigil
// serve on every address, with a warning in its log. On that listener the
// admin paths are absent, and an Origin other than the request's host is
// refused, as on loopback.
func TestServiceAllowUnauthenticatedWarns(t *testing.T) {
	svc := startService(t, "-http", "0.0.0.0:0", "-allow-unauthenticated", "-allowed-hosts", "mcp.example", "-admin-http", "127.0.0.1:0")
	assert.Contains(t, svc.logs.String(), `level=WARN msg="serving /mcp without authorization on a non-loopback address (-allow-unauthenticated)" addr=0.0.0.0:0`)
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(svc.base, "http://"))
	require.NoError(t, err)
	svcGet(t, hc, "http://127.0.0.1:"+port+"/debug/vigil", http.StatusNotFound)
	initialize := func(origin string) int {
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:"+port+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"o","version":"1"}}}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := hc.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, initialize(""))
	assert.Equal(t, http.StatusOK, initialize("http://127.0.0.1:"+port))
	assert.Equal(t, http.StatusForbidden, initialize("http://evil.example"), "a foreign Origin on a non-loopback listener")
}

// An issuer that cannot be reached fails the start of a JWT-verifying
// vigil, naming the issuer; an introspecting one discovers its endpoint at
// the first request, and starts.
func TestNewAuthorization(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	srv := server.New()
	t.Cleanup(func() { _ = srv.Close() })
	cfg := defaultConfig()
	cfg.authIssuer = down.URL
	_, err := newAuthorization(t.Context(), cfg, "http://127.0.0.1:8080/mcp", srv, nil, nil, prometheus.NewRegistry(), logger)
	require.ErrorContains(t, err, "-auth-issuer "+down.URL)

	cfg.introspectionClientID, cfg.introspectionSecret = "vigil", "s3cret"
	authz, err := newAuthorization(t.Context(), cfg, "http://127.0.0.1:8080/mcp", srv, nil, nil, prometheus.NewRegistry(), logger)
	require.NoError(t, err)
	defer authz.close()
	paths := slices.Sorted(maps.Keys(authz.public()))
	assert.Equal(t, []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"}, paths)
}

// Through the MCP endpoint itself: a POST whose body stops coming is
// answered and its connection closed once -body-read-timeout passes.
func TestServiceTricklingPostIsCutOff(t *testing.T) {
	svc := startService(t, "-http", "127.0.0.1:0", "-body-read-timeout", "200ms")
	conn := dial(t, strings.TrimPrefix(svc.base, "http://"))
	_, err := fmt.Fprint(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 200\r\n\r\n{\"jsonrpc\":\"2.0\",")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "an answer before the close")
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "closed by vigil, not the watchdog")
}

// dial connects to addr; every read and write fails after 10 s, the
// watchdog of a test expecting the server to close the connection sooner.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	return conn
}

// An -admin-http beyond loopback that serves the user mode's accounts is
// warned about by name: the listings and revocations anyone reaching it
// may make. Loopback, or no user-mode upstream, is no such warning.
func TestAdminAccountsWarning(t *testing.T) {
	users := map[string]upstreamspec.Auth{"u": {Mode: upstreamspec.User}}
	w := adminAccountsWarning(config{adminAddr: "0.0.0.0:9090", upstreamAuth: users})
	assert.Contains(t, w, "GET /admin/connections lists any user's connections")
	assert.Contains(t, w, "POST /admin/connections/revoke disconnects any user")
	assert.Empty(t, adminAccountsWarning(config{adminAddr: "127.0.0.1:9090", upstreamAuth: users}), "loopback")
	assert.Empty(t, adminAccountsWarning(config{adminAddr: "0.0.0.0:9090"}), "no user-mode upstream")
	assert.Empty(t, adminAccountsWarning(config{upstreamAuth: users}), "no admin listener")
}
