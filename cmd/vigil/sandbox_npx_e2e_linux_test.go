package main

import (
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSandboxNpx: `npx -y` fetches a reference server from the npm
// registry through the sandbox's egress proxy (the profile names the
// registry and nothing else), into the upstream's private directory, and
// the server runs sandboxed: listed and called through the gateway.
func TestSandboxNpx(t *testing.T) {
	if _, err := exec.LookPath("npx"); err != nil {
		missingComponent(t, "npx is not installed")
	}
	dir := t.TempDir()
	svc := startService(t, "-http", "127.0.0.1:0", "-upstream-sandbox-dir", dir,
		"-upstream", "think=npx -y @modelcontextprotocol/server-sequential-thinking@2026.8.31",
		"-upstream-sandbox", "think=none,net=registry.npmjs.org:443",
	)
	hc := &http.Client{Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	svcEventually(t, "npx fetched the server through the proxy, and it lists its tool", 2*time.Minute, func() (bool, error) {
		m, err := c.rpc("2", "tools/list", `{}`)
		return err == nil && m.Error == nil && strings.Contains(string(m.Result), `"sequentialthinking"`), err
	})
	m, err = c.rpc("3", "tools/call", `{"name":"sequentialthinking","arguments":{"thought":"one","thoughtNumber":1,"totalThoughts":1,"nextThoughtNeeded":false}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), `thoughtNumber`)
	assert.NotContains(t, svc.logs.String(), `msg="sandbox egress refused"`, "npx reached only the registry")
	hc.CloseIdleConnections()
	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, svc.wait(15*time.Second), "vigil and its sandboxed upstream end before the private directory is removed")
}
