package main

import (
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGatewayProcessShare: with -upstream-max-processes 4, one address
// (127.0.0.1) opens 6 sessions of vigil -upstream 'e=vigil-everything
// -stdio' and calls once in each: its first 4 get the 4 processes (and
// each subscribes to a resource there), the others are refused. Another address's (127.0.0.2) first call is then
// served within a second, on a process ended for it among the first
// address's idle ones (-quota-process-share, half by default).
func TestGatewayProcessShare(t *testing.T) {
	everything := filepath.Join(t.TempDir(), "vigil-everything")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", everything, "../vigil-everything").CombinedOutput()
	require.NoError(t, err, "%s", out)
	svc := startService(t, "-http", "127.0.0.1:0", "-upstream-max-processes", "4", "-upstream", "e="+everything+" -stdio")
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
		t.Cleanup(hc.CloseIdleConnections)
		return hc
	}
	session := func(hc *http.Client) *svcClient {
		c := &svcClient{hc: hc, url: svc.base + "/mcp"}
		m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		require.NoError(t, c.notify("notifications/initialized"))
		return c
	}
	call := func(c *svcClient) svcMessage {
		m, err := c.rpc("2", "tools/call", `{"name":"test_simple_text"}`)
		require.NoError(t, err)
		if m.Error == nil {
			assert.Contains(t, string(m.Result), "This is a simple text response for testing.")
		}
		return m
	}
	heavy := from("127.0.0.1")
	for i := range 6 {
		c := session(heavy)
		rpcErr := call(c).Error
		if i < 4 {
			require.Nil(t, rpcErr, "session %d", i)
			m, err := c.rpc("3", "resources/subscribe", `{"uri":"test://watched-resource"}`) // held on its process
			require.NoError(t, err)
			require.Nil(t, m.Error, "session %d's subscription", i)
			continue
		}
		require.NotNil(t, rpcErr, "session %d: beyond the bound, its caller over its share", i)
		assert.Contains(t, rpcErr.Message, "its 4 processes all serve other sessions")
	}
	other := session(from("127.0.0.2"))
	start := time.Now()
	rpcErr := call(other).Error
	took := time.Since(start)
	require.Nil(t, rpcErr, "the other address's first call")
	assert.Less(t, took, time.Second)
	t.Logf("the other address's first call was served in %v", took)
	assert.True(t, svc.logs.waitFor("upstream: a session's process ended for another caller's", 10*time.Second), "logged:\n%s", svc.logs.String())
	assert.Contains(t, svc.logs.String(), "share="+strconv.Itoa(2))
}
