package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/hostiletest"
)

// The instructions' acceptance (issue 77, V5): what vigil's answers that
// carry the instructions may weigh, and how many initializes no one reads.
const (
	instructionsBound   = 256 << 10 // the gateway's bound on the server's instructions (docs/limits.md)
	unreadInitializes   = 48
	instructionsRSSLeft = 256 << 20 // GOMEMLIMIT
)

// TestGatewayInstructionsBytes is the acceptance of the instructions'
// bound (issue 77, V5): two upstreams answer initialize with 3.9 MB of
// instructions each, under GOMEMLIMIT=256MiB. vigil's initialize and
// server/discover answers stay within the bound on the instructions (256
// KiB) and say they were cut in the log; 48 initializes whose answers are
// never read keep vigil's peak resident memory under GOMEMLIMIT.
func TestGatewayInstructionsBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("answers 48 initializes no one reads")
	}
	t.Setenv("GOMEMLIMIT", "256MiB")
	self := os.Args[0] + " -test.run=^$"
	var args []string
	for _, name := range []string{"a", "b"} {
		args = append(args, "-upstream", name+"="+self, "-upstream-env", name+"="+hostileUpstreamEnv+"=1",
			"-upstream-env", name+"="+hostiletest.InstructionsEnv+"=3900000")
	}
	svc := startService(t, append([]string{"-http", "127.0.0.1:0"}, args...)...)
	pid := svc.cmd.Process.Pid
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: unreadInitializes}}
	t.Cleanup(hc.CloseIdleConnections)
	waitMetrics(t, hc, svc.base, func(m string) bool {
		return strings.Contains(m, `mcp_gateway_upstream_state{state="ready",upstream="a"} 1`) &&
			strings.Contains(m, `mcp_gateway_upstream_state{state="ready",upstream="b"} 1`)
	})
	const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	resp, err := c.post(initialize)
	require.NoError(t, err)
	n, err := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	t.Logf("initialize answered with %d bytes", n)
	assert.Less(t, n, int64(instructionsBound+4096), "initialize within the bound")
	modern := &svcClient{hc: hc, url: svc.base + "/mcp", modern: true}
	discover, err := modern.rpc(`1`, "server/discover", `{}`)
	require.NoError(t, err)
	require.Nil(t, discover.Error)
	t.Logf("server/discover answered with a result of %d bytes", len(discover.Result))
	assert.Less(t, len(discover.Result), instructionsBound+4096, "server/discover within the bound")
	assert.True(t, svc.logs.waitFor("the upstream's instructions cut to the gateway's bound", 10*time.Second), "logged:\n%s", svc.logs.String())

	// Initializes whose answers no one reads: each answer is written (or
	// blocked writing) once its headers are in.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var started, ended sync.WaitGroup
	for range unreadInitializes {
		started.Add(1)
		ended.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(initialize))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := hc.Do(req)
			started.Done()
			if err == nil {
				<-ctx.Done() // never read
				_ = resp.Body.Close()
			}
		})
	}
	started.Wait()
	peak := vmHWM(t, pid)
	cancel()
	ended.Wait()
	t.Logf("vigil's peak RSS (VmHWM) with %d initializes unread: %.0f MiB", unreadInitializes, float64(peak)/(1<<20))
	assert.Less(t, peak, int64(instructionsRSSLeft), "peak RSS over GOMEMLIMIT")
}
