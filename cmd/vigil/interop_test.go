package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// interopDir holds the TypeScript SDK harness (package.json, package-lock.json
// and stdio-client.mjs). Its node_modules are installed by `make test`.
const interopDir = "testdata/interop"

// TestInteropTypeScriptStdio drives the vigil binary (built by TestMain) over stdio
// with the official TypeScript MCP SDK client: initialize, tools/list,
// tools/call echo and tools/call sleep.
func TestInteropTypeScriptStdio(t *testing.T) {
	node := requireInteropPrereqs(t)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	client := exec.CommandContext(ctx, node, "stdio-client.mjs", vigilBin)
	client.Dir = interopDir
	// If the client is killed, don't wait forever for a grandchild (the vigil
	// server) that still holds the output pipe open.
	client.WaitDelay = 5 * time.Second
	out, err := client.CombinedOutput()
	t.Logf("TypeScript client output:\n%s", out)
	require.NoError(t, ctx.Err(), "TypeScript client timed out:\n%s", out)
	require.NoError(t, err, "TypeScript client failed:\n%s", out)
}

// TestInteropTypeScriptHTTP drives the vigil binary (built by TestMain) over
// Streamable HTTP with the official TypeScript MCP SDK client: it connects,
// lists and calls tools, receives a tool's progress on the request's stream,
// and deletes its session. Then vigil exits with status 0 on SIGTERM.
func TestInteropTypeScriptHTTP(t *testing.T) {
	node := requireInteropPrereqs(t)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	logs := &urlWatcher{found: make(chan string, 1)}
	server := exec.Command(vigilBin, "-http", "127.0.0.1:0")
	server.Stderr = logs
	require.NoError(t, server.Start())
	exited := make(chan error, 1)
	go func() { exited <- server.Wait() }()
	defer func() {
		select {
		case err := <-exited:
			t.Logf("vigil exited: %v", err)
		default:
			_ = server.Process.Kill()
			t.Logf("vigil killed: %v", <-exited)
		}
		t.Logf("vigil stderr:\n%s", logs.String())
	}()

	var url string
	select {
	case url = <-logs.found:
	case err := <-exited:
		exited <- err
		t.Fatalf("vigil exited before serving: %v", err)
	case <-ctx.Done():
		t.Fatal("vigil did not log its URL within 60s")
	}

	client := exec.CommandContext(ctx, node, "http-client.mjs", url)
	client.Dir = interopDir
	client.WaitDelay = 5 * time.Second
	out, err := client.CombinedOutput()
	t.Logf("TypeScript client output:\n%s", out)
	require.NoError(t, ctx.Err(), "TypeScript client timed out:\n%s", out)
	require.NoError(t, err, "TypeScript client failed:\n%s", out)

	require.NoError(t, server.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		exited <- err
		require.NoError(t, err, "vigil must exit with status 0 after SIGTERM")
	case <-ctx.Done():
		t.Fatal("vigil did not exit after SIGTERM")
	}
}

// urlWatcher collects vigil's stderr and sends the URL of its "serving MCP"
// line on found, once.
type urlWatcher struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	found chan string
	sent  bool
	grew  chan struct{} // closed by the next Write; nil: no one waits (waitFor)
}

var servingLine = regexp.MustCompile(`msg="serving MCP" url=(\S+)\n`)

func (w *urlWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.grew != nil {
		close(w.grew)
		w.grew = nil
	}
	if !w.sent {
		if m := servingLine.FindSubmatch(w.buf.Bytes()); m != nil {
			w.sent = true
			w.found <- string(m[1])
		}
	}
	return len(p), nil
}

// waitFor reports whether the output holds s, waiting up to d for the
// writes that bring it: vigil's log lines reach stderr within the log
// writer's flush interval, not as they are logged.
func (w *urlWatcher) waitFor(s string, d time.Duration) bool {
	timeout := time.After(d)
	for {
		w.mu.Lock()
		if strings.Contains(w.buf.String(), s) {
			w.mu.Unlock()
			return true
		}
		if w.grew == nil {
			w.grew = make(chan struct{})
		}
		grew := w.grew
		w.mu.Unlock()
		select {
		case <-grew:
		case <-timeout:
			return false
		}
	}
}

// grown returns a channel closed by the next write.
func (w *urlWatcher) grown() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.grew == nil {
		w.grew = make(chan struct{})
	}
	return w.grew
}

func (w *urlWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// requireInteropPrereqs returns the path of node. If node or the harness's
// node_modules are missing it skips the test, or fails it when running in CI
// (CI=true), where `make test` is expected to have installed them.
func requireInteropPrereqs(t *testing.T) string {
	t.Helper()
	testkit.External(t, "node and the TypeScript SDK harness")

	missing := func(reason string) {
		t.Helper()
		msg := reason + "; run `make test` (it runs `npm ci --prefix cmd/vigil/" + interopDir +
			"`) to install the TypeScript SDK interop harness"
		missingComponent(t, msg)
	}

	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}

	_, err = os.Stat(filepath.Join(interopDir, "node_modules"))
	if errors.Is(err, os.ErrNotExist) {
		missing(interopDir + "/node_modules is missing")
	}
	require.NoError(t, err)

	return node
}
