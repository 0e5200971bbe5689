package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

// stdioProcess is a vigil -stdio process: its stdin, its stdout's lines,
// and send, which writes one line to stdin.
type stdioProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Reader
	send  func(string)
}

// startStdio starts vigil -stdio with args, its stderr going to stderr
// (nil: nowhere); the process is killed when the test ends, if it still
// runs.
func startStdio(t *testing.T, stderr io.Writer, args ...string) stdioProcess {
	t.Helper()
	cmd := exec.Command(vigilBin, append([]string{"-stdio"}, args...)...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	send := func(s string) {
		_, err := io.WriteString(stdin, s+"\n")
		require.NoError(t, err)
	}
	return stdioProcess{cmd: cmd, stdin: stdin, lines: bufio.NewReader(stdout), send: send}
}

// With a 60 s sleep in flight, closing stdin makes vigil exit with status 0
// within 500 ms, without answering the cancelled call.
func TestStdinCloseExitsPromptlyWithCallInFlight(t *testing.T) {
	p := startStdio(t, nil)
	cmd, stdin, lines, send := p.cmd, p.stdin, p.lines, p.send

	send(initializeLine)
	line, err := lines.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, `"id":1,"result"`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}}`)
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	line, err = lines.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, `"id":3,"result"`, "the ping is answered while the sleep runs")

	start := time.Now()
	require.NoError(t, stdin.Close())
	exited := make(chan error, 1)
	rest := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(lines)
		rest <- string(b)
		exited <- cmd.Wait()
	}()
	select {
	case err := <-exited:
		require.NoError(t, err, "exit status must be 0")
		t.Logf("exited %v after stdin closed", time.Since(start))
	case <-time.After(500 * time.Millisecond):
		t.Fatal("vigil did not exit within 500ms of stdin closing")
	}
	assert.Empty(t, <-rest, "the cancelled sleep must not be answered")
}

// With stdout's reader gone, vigil is not killed by SIGPIPE: the write fails
// with EPIPE, is logged at debug level, and the process runs until stdin
// closes, then exits 0.
func TestVanishedStdoutReaderDoesNotKill(t *testing.T) {
	cmd := exec.Command(vigilBin, "-stdio", "-log-level", "debug")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = outW
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	require.NoError(t, outW.Close()) // the child keeps its copy
	require.NoError(t, outR.Close()) // and now nobody reads it

	logs := make(chan string, 100)
	go func() {
		defer close(logs)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs <- sc.Text()
		}
	}()
	_, err = io.WriteString(stdin, initializeLine+"\n")
	require.NoError(t, err)
	var seen []string
	for line := range logs {
		seen = append(seen, line)
		if strings.Contains(line, "write failed") {
			break
		}
	}
	require.NotEmpty(t, seen)
	require.Contains(t, seen[len(seen)-1], "write failed", "logs: %v", seen)
	assert.Contains(t, seen[len(seen)-1], "class=peer_gone")

	// Still alive: it keeps reading (and dropping) requests.
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")
	require.NoError(t, err, "vigil died: its stdin is closed")
	require.NoError(t, stdin.Close())
	for line := range logs {
		seen = append(seen, line)
	}
	require.NoError(t, cmd.Wait(), "exit status must be 0 (not killed by SIGPIPE); logs: %v", seen)
}

// When stdin ends, vigil logs every request it answered before it exits,
// those still waiting for their batch of outcomes too
// (server.WithOutcomeBatches): fewer than a batch here.
func TestStdinCloseLogsEveryRequest(t *testing.T) {
	var stderr strings.Builder
	p := startStdio(t, &stderr)
	cmd, stdin, lines, send := p.cmd, p.stdin, p.lines, p.send
	send(initializeLine)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	const calls = 5
	for i := range calls {
		send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i+2) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	}
	for range calls + 1 {
		line, err := lines.ReadString('\n')
		require.NoError(t, err)
		require.Contains(t, line, `"result"`)
	}
	require.NoError(t, stdin.Close())
	_, _ = io.Copy(io.Discard, lines)
	require.NoError(t, cmd.Wait())
	assert.Equal(t, 1, strings.Count(stderr.String(), "msg=request method=initialize "), stderr.String())
	assert.Equal(t, calls, strings.Count(stderr.String(), "msg=request method=tools/call tool=echo "), stderr.String())
}

// -auth-issuer guards HTTP only: with -stdio the client (which holds no
// token) still sees and calls every tool, as without it, and vigil warns
// at start. (The fail-closed tool access is not installed there.)
func TestStdioWithAuthIssuer(t *testing.T) {
	var stderr strings.Builder
	p := startStdio(t, &stderr, "-auth-issuer", "https://as.example.com", "-auth-tool-scopes", "echo=admin")
	p.send(initializeLine)
	line, err := p.lines.ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, `"id":1,"result"`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	line, err = p.lines.ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, `"name":"echo"`, "the scoped tool is listed")
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	line, err = p.lines.ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, `"id":3,"result"`)
	require.NoError(t, p.stdin.Close())
	require.NoError(t, p.cmd.Wait()) // stderr is all copied once Wait returns
	assert.Contains(t, stderr.String(), "-auth-issuer guards HTTP requests only")
}
