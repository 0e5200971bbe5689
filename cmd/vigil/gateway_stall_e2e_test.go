package main

import (
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// stallUpstreamEnv makes the test binary an upstream that stops reading
// at its first tool call and ignores SIGTERM (stalltest.Upstream).
const stallUpstreamEnv = "STALL_E2E_UPSTREAM"

// TestStalledUpstreamE2E is issue 67's stall repro against the binary:
// -upstream-shared -request-timeout 3s, a stdio upstream that stops
// reading. Every one of 20 calls (each more than a pipe's buffer, with
// the others) is answered -32001 by its deadline; then, with 5 more calls
// in flight, SIGTERM ends vigil and the upstream, which ignores SIGTERM
// and end of input, within -shutdown-grace.
func TestStalledUpstreamE2E(t *testing.T) {
	const (
		timeout = 3 * time.Second
		grace   = 2 * time.Second
	)
	logs := &routingLog{grew: make(chan struct{})}
	vigil := startPeer(t, "vigil", logs, nil, vigilBin,
		"-http", "127.0.0.1:0", "-log-format", "json",
		"-upstream", "s="+os.Args[0]+" '-test.run=^$'",
		"-upstream-env", "s="+stallUpstreamEnv+"=1", "-upstream-env", "s=GORACE=atexit_sleep_ms=0",
		"-upstream-shared", "-request-timeout", timeout.String(), "-shutdown-grace", grace.String())
	url := logs.await(t, "its URL", func() string { return logs.url })
	hc := &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
	t.Cleanup(hc.CloseIdleConnections)

	type answer struct {
		took time.Duration
		err  *transport.Error
	}
	big := strings.Repeat("x", 32<<10)
	call := func(answers chan<- answer) {
		c := mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: url, Client: hc}))
		c.Initialize("", nil)
		go func() {
			start := time.Now()
			_, rpcErr := c.Call("tools/call", map[string]any{"name": "stall", "arguments": map[string]any{"data": big}})
			answers <- answer{time.Since(start), rpcErr}
		}()
	}
	const calls = 20
	answers := make(chan answer, calls)
	for range calls {
		call(answers)
	}
	pid, err := testkit.HostPID(strings.Fields(logs.awaitSaid(t, "stalled "))[1])
	require.NoError(t, err)
	var slowest time.Duration
	for range calls {
		a := <-answers
		slowest = max(slowest, a.took)
		if assert.NotNil(t, a.err) {
			assert.Equal(t, int64(protocol.CodeRequestTimeout), a.err.Code, a.err.Message)
		}
	}
	t.Logf("%d calls to an upstream that stopped reading, -request-timeout %v: the slowest answered after %v", calls, timeout, slowest)
	assert.Less(t, slowest, timeout+time.Second, "every call answers by its deadline")

	// Five more calls, by hand: they may end with their connection.
	more := make(chan error, 5)
	conn := streamable.Dial(streamable.ClientConfig{URL: url, Client: hc})
	c := mcptest.NewClient(t, conn)
	version := c.Initialize("", nil).ProtocolVersion
	session := conn.(interface{ SessionID() string }).SessionID()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stall","arguments":{"data":"` + big + `"}}}`
	for range 5 {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("MCP-Protocol-Version", version)
		go func() {
			resp, err := hc.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			more <- err
		}()
	}
	start := time.Now()
	require.NoError(t, vigil.cmd.Process.Signal(syscall.SIGTERM))
	var exitErr error
	select {
	case exitErr = <-vigil.exited:
		vigil.exited <- exitErr
	case <-time.After(30 * time.Second):
		t.Fatalf("vigil did not exit within 30 s of SIGTERM (-shutdown-grace %v)", grace)
	}
	took := time.Since(start)
	t.Logf("SIGTERM with 5 calls in flight, -shutdown-grace %v: vigil exited after %v (%v)", grace, took, exitErr)
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "the upstream is gone")
	assert.Less(t, took, grace+500*time.Millisecond, "vigil and its upstream are gone within -shutdown-grace (it aims at 1.9 s; the slack is for a loaded machine)")
	for range 5 {
		t.Logf("an in-flight call: %v", <-more) // answered, or its connection closed
	}
}
