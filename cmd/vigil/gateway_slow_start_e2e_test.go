package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// slowUpstreamEnv makes the test binary a stdio upstream that serves
// "hello" and, as npx fetching a package on its first run, answers
// initialize late on its first start: its value is "SECONDS:MARKER", and
// the start that creates the file MARKER (the cache, for npx) waits
// SECONDS; the later ones answer at once.
const slowUpstreamEnv = "SLOW_E2E_UPSTREAM"

// slowUpstream is the upstream of slowUpstreamEnv.
func slowUpstream(spec string) int {
	delay, marker, _ := strings.Cut(spec, ":")
	secs, err := strconv.Atoi(delay)
	if err != nil || marker == "" {
		return 2
	}
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	first := err == nil
	if first {
		_ = f.Close()
	}
	srv := server.New(server.WithMiddleware(func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "initialize" && first {
				time.Sleep(time.Duration(secs) * time.Second)
			}
			return next(ctx, req)
		}
	}))
	if err := srv.AddTool(server.Tool{Name: "hello"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	}); err != nil {
		return 1
	}
	_ = srv.Serve(context.Background(), stdio.Std())
	return 0
}

// TestSlowUpstreamServedWithDefaults: vigil -upstream x=SLOW, whose
// upstream answers its first initialize after 90 s, serves it with the
// default flags, logging the start every 10 s meanwhile. Before, the 30 s start
// timeout failed every start, forever. (In fake time: the gateway's
// TestSlowStartServedWithDefaults.)
func TestSlowUpstreamServedWithDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 90 s")
	}
	t.Parallel()
	marks := t.TempDir()
	svc := startService(t, "-http", "127.0.0.1:0",
		"-upstream", "x="+os.Args[0]+" '-test.run=^$'",
		"-upstream-env", "x="+slowUpstreamEnv+"=90:"+filepath.Join(marks, "fetched"), "-upstream-env", "x=GORACE=atexit_sleep_ms=0",
		"-upstream-sandbox", "x=none,write="+marks) // its mark of a first start, kept across its starts
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	svcEventually(t, "/readyz answering 200", 150*time.Second, func() (bool, error) {
		resp, err := hc.Get(svc.base + "/readyz")
		if err != nil {
			return false, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	logs := svc.logs.String()
	assert.GreaterOrEqual(t, strings.Count(logs, `msg="upstream starting" upstream=x`), 8, "progress every 10 s:\n%s", logs)
	assert.NotContains(t, logs, "upstream did not start")
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	_, err := c.rpc(`1`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"slow-test","version":"1"}}`)
	require.NoError(t, err)
	m, err := c.rpc(`2`, "tools/call", `{"name":"hello"}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), `"hello"`)
	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, svc.wait(15*time.Second))
}
