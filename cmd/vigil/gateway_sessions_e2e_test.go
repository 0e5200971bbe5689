package main

import (
	"io"
	"net/http"
	"os/exec"
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

// sessionOpened is vigil's log line of an upstream session opened for a
// client session: its session id and the process's pid.
var sessionOpened = regexp.MustCompile(`msg="upstream session opened" upstream=e session=(\S+) pid=(\d+)`)

// TestGatewaySessionProcesses: two HTTP clients of vigil -upstream
// 'e=vigil-everything -stdio' get an upstream process each, started at
// their first call; a 2026-07-28 request starts none (it goes to the
// process vigil keeps for listing); one client's DELETE of its session
// ends its process, and the other's serves on.
func TestGatewaySessionProcesses(t *testing.T) {
	everything := filepath.Join(t.TempDir(), "vigil-everything")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", everything, "../vigil-everything").CombinedOutput()
	require.NoError(t, err, "%s", out)

	svc := startService(t, "-http", "127.0.0.1:0", "-log-level", "debug", "-upstream", "e="+everything+" -stdio")
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	call := func(c *svcClient, id string) {
		t.Helper()
		m, err := c.rpc(id, "tools/call", `{"name":"test_simple_text"}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		assert.Contains(t, string(m.Result), "This is a simple text response for testing.")
	}
	var clients [2]*svcClient
	for i := range clients {
		c := &svcClient{hc: hc, url: svc.base + "/mcp"}
		m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		require.NoError(t, c.notify("notifications/initialized"))
		call(c, "2")
		clients[i] = c
	}
	call(clients[0], "3")
	resp, err := (&svcClient{hc: hc, url: svc.base + "/mcp"}).postHeaders(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"test_simple_text","_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},`+
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "test_simple_text"})
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "This is a simple text response for testing.")

	svcEventually(t, "the log of the stateless call (vigil logs in order, in the background)", 10*time.Second, func() (bool, error) {
		return strings.Contains(svc.logs.String(), "msg=request method=tools/call tool=test_simple_text request_id=4 "), nil
	})
	pids := map[string]int{} // by session id
	for _, m := range sessionOpened.FindAllStringSubmatch(svc.logs.String(), -1) {
		pid, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		pids[m[1]] = pid
	}
	require.Len(t, pids, 2, "a process per client session, none for the stateless request:\n%s", svc.logs.String())
	one, two := pids[clients[0].session], pids[clients[1].session]
	require.NotZero(t, one)
	require.NotZero(t, two)
	assert.NotEqual(t, one, two)

	req, err := http.NewRequestWithContext(t.Context(), http.MethodDelete, svc.base+"/mcp", nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", clients[0].session)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err = hc.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, resp.Status)
	exited := regexp.MustCompile(`msg="upstream process exited" upstream=e pid=` + strconv.Itoa(one) + `\b`)
	svcEventually(t, "the process of the deleted session exiting", 10*time.Second, func() (bool, error) {
		return exited.MatchString(svc.logs.String()), nil
	})
	require.ErrorIs(t, syscall.Kill(one, 0), syscall.ESRCH, "waited for: no such process")
	require.NoError(t, syscall.Kill(two, 0), "the other session's lives")
	call(clients[1], "5")
	svcEventually(t, "the log of the last call", 10*time.Second, func() (bool, error) {
		return strings.Contains(svc.logs.String(), "msg=request method=tools/call tool=test_simple_text request_id=5 "), nil
	})
	assert.Len(t, sessionOpened.FindAllString(svc.logs.String(), -1), 2, "the other session kept its process")

	hc.CloseIdleConnections()
	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, svc.wait(15*time.Second), "exit status 0 after SIGTERM")
	require.ErrorIs(t, syscall.Kill(two, 0), syscall.ESRCH, "vigil ended its upstreams")
}
