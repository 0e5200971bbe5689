package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// svcCuts returns mcp_server_streams_cut_total{reason} from /metrics.
func svcCuts(t *testing.T, hc *http.Client, base, reason string) float64 {
	t.Helper()
	return svcSample(t, svcMetrics(t, hc, base), mcpconv.MetricStreamsCut, map[string]string{"reason": reason}).GetCounter().GetValue()
}

// The slow-reader attack against the shipped binary: a client that asks
// for a large answer and never reads it (its receive buffer small, its
// TCP window closed) is cut after -sse-write-timeout, counted, and its
// session goes on serving; a session whose client never finishes
// initialize ends after -init-timeout, counted.
func TestHostileSlowReaderAndAbandonedInitialize(t *testing.T) {
	svc := startService(t, "-http", "127.0.0.1:0", "-sse-write-timeout", "300ms", "-init-timeout", "1s")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	require.Zero(t, svcCuts(t, hc, svc.base, "write_timeout"), "the series exists from the start")

	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	_, err := c.rpc(`1`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"reader","version":"1"}}`)
	require.NoError(t, err)
	require.NoError(t, c.notify("notifications/initialized"))

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	host := strings.TrimPrefix(svc.base, "http://")
	conn, err := d.DialContext(t.Context(), "tcp", host)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 3<<20) + `"}}}`
	_, err = io.WriteString(conn, fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s", host, c.session, len(body), body))
	require.NoError(t, err)
	svcEventually(t, "the unread answer cut", 20*time.Second, func() (bool, error) {
		return svcCuts(t, hc, svc.base, "write_timeout") == 1, nil
	})
	ping, err := c.rpc(`3`, "ping", `{}`)
	require.NoError(t, err)
	require.Nil(t, ping.Error, "the session lives on")

	abandoned := &svcClient{hc: hc, url: svc.base + "/mcp"}
	_, err = abandoned.rpc(`1`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"abandoned","version":"1"}}`)
	require.NoError(t, err)
	svcEventually(t, "the session never initialized ended", 20*time.Second, func() (bool, error) {
		return svcCuts(t, hc, svc.base, "init_timeout") == 1, nil
	})
	resp, err := abandoned.post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	ping, err = c.rpc(`4`, "ping", `{}`)
	require.NoError(t, err)
	require.Nil(t, ping.Error, "the initialized session is still served")
}
