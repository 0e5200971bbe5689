package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
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

// TestHostileAuditFlood: vigil -audit-log with its defaults, writing to a
// pipe nobody reads (a stalled destination). A caller floods tool calls,
// each naming 200 arguments of 200 bytes. Every line is bounded (64 names
// of at most 128 bytes, the rest counted), and every call is either in the
// audit log or counted as dropped: in mcp_server_audit_lines_dropped_total
// while vigil runs, and in its log at exit. None is lost silently.
func TestHostileAuditFlood(t *testing.T) {
	const calls, names = 230, 200
	fifo := filepath.Join(t.TempDir(), "audit.fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	// A reader that reads nothing until the end: the pipe fills, then
	// vigil's buffer.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, err)
	defer func() { _ = r.Close() }()
	svc := startService(t, "-http", "127.0.0.1:0", "-audit-log", fifo)
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	_, err = c.rpc(`1`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"audit-flood","version":"1"}}`)
	require.NoError(t, err)
	require.NoError(t, c.notify("notifications/initialized"))

	args := map[string]any{"text": "flood"}
	for i := range names {
		args[fmt.Sprintf("arg%03d-%s", i, strings.Repeat("x", 193))] = i
	}
	params, err := json.Marshal(map[string]any{"name": "echo", "arguments": args})
	require.NoError(t, err)
	for i := range calls {
		_, err := c.rpc(strconv.Itoa(i+2), "tools/call", string(params))
		require.NoError(t, err, "call %d", i)
	}
	dropped := regexp.MustCompile(`(?m)^mcp_server_audit_lines_dropped_total (\d+)$`)
	var seen int
	svcEventually(t, "audit lines dropped, counted", 30*time.Second, func() (bool, error) {
		m := dropped.FindStringSubmatch(svcGet(t, hc, svc.base+"/metrics", http.StatusOK))
		if m == nil {
			return false, fmt.Errorf("no %s", "mcp_server_audit_lines_dropped_total")
		}
		seen, _ = strconv.Atoi(m[1])
		return seen > 0, nil
	})

	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r) // until vigil closes its end, at exit
		read <- b
	}()
	hc.CloseIdleConnections()
	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, svc.wait(15*time.Second), "exit status 0 after SIGTERM")
	audit := <-read

	m := regexp.MustCompile(`audit log lines dropped[^\n]* lines=(\d+)`).FindStringSubmatch(svc.logs.String())
	require.NotNil(t, m, "the drops are logged at exit")
	total, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, total, seen, "the count only grows")

	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(audit))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines++
		require.Less(t, len(sc.Bytes()), 16<<10, "line %d", lines)
		var rec struct {
			Tool          string   `json:"tool"`
			Arguments     []string `json:"arguments"`
			MoreArguments int      `json:"more_arguments"`
			Truncated     bool     `json:"truncated"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "line %d", lines)
		assert.Equal(t, "echo", rec.Tool)
		assert.Len(t, rec.Arguments, 64)
		assert.Equal(t, names+1-64, rec.MoreArguments, "every argument listed or counted")
		assert.True(t, rec.Truncated)
	}
	require.NoError(t, sc.Err())
	t.Logf("%d calls: %d audit lines written, %d dropped and counted (%d seen on /metrics)", calls, lines, total, seen)
	assert.Equal(t, calls, lines+total, "every call written or counted")
}
