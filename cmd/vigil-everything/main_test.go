package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// everythingBin is the vigil-everything binary built once for the tests
// that spawn it.
var everythingBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vigil-everything-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	everythingBin = filepath.Join(dir, "vigil-everything")
	if out, err := exec.Command("go", "build", "-o", everythingBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { _ = os.RemoveAll(dir) }))
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader on different
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr error  // matched with ErrorIs when set
		wantMsg string // the error's text otherwise
		stderr  string // contained in stderr
	}{
		{name: "help", args: []string{"-h"}, wantErr: flag.ErrHelp, stderr: "Usage: vigil-everything -stdio|-http ADDR [flags]"},
		{name: "no transport", args: nil, wantErr: errNoTransport, stderr: "-stdio"},
		{name: "extra arguments", args: []string{"-stdio", "now"}, wantMsg: `unexpected arguments: ["now"]`},
		{name: "bad log level", args: []string{"-stdio", "-log-level", "loud"}, wantMsg: `-log-level: slog: level string "loud": unknown name`},
		{name: "unknown flag", args: []string{"-sse", ":8080"}, wantMsg: "flag provided but not defined: -sse", stderr: "Usage:"},
		{name: "both transports", args: []string{"-stdio", "-http", "127.0.0.1:0"}, wantErr: errNoTransport, stderr: "Usage:"},
		{name: "every interface", args: []string{"-http", ":0"}, wantMsg: "-http :0 is not a loopback address: the fixtures have no authentication; pass -allow-public to serve them there anyway"},
		{name: "wildcard address", args: []string{"-http", "0.0.0.0:0"}, wantMsg: "-http 0.0.0.0:0 is not a loopback address: the fixtures have no authentication; pass -allow-public to serve them there anyway"},
		{name: "no sessions", args: []string{"-http", "127.0.0.1:0", "-max-sessions", "0"}, wantMsg: "-max-sessions must be positive, -list-changed-delay and -gc-headroom not negative"},
		{name: "negative list-changed delay", args: []string{"-stdio", "-list-changed-delay", "-1s"}, wantMsg: "-max-sessions must be positive, -list-changed-delay and -gc-headroom not negative"},
		{name: "negative GC headroom", args: []string{"-stdio", "-gc-headroom", "-1"}, wantMsg: "-max-sessions must be positive, -list-changed-delay and -gc-headroom not negative"},
		{name: "named host", args: []string{"-http", "example.com:0"}, wantMsg: "-http example.com:0 is not a loopback address: the fixtures have no authentication; pass -allow-public to serve them there anyway"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stderr syncBuffer
			err := run(t.Context(), tc.args, strings.NewReader(""), io.Discard, &stderr)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.EqualError(t, err, tc.wantMsg)
			}
			assert.Contains(t, stderr.String(), tc.stderr)
		})
	}
}

// run serves over the streams it is given, returns nil when the input ends,
// and shuts down gracefully when its context is done.
func TestRunServesUntilInputEndsOrContextDone(t *testing.T) {
	for _, byCancel := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancel=%v", byCancel), func(t *testing.T) {
			watchdog(t)
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var stderr syncBuffer
			done := make(chan error, 1)
			go func() { done <- run(ctx, []string{"-stdio"}, inR, outW, &stderr) }()

			_, err := io.WriteString(inW, initializeLine+"\n")
			require.NoError(t, err)
			line, err := bufio.NewReader(outR).ReadString('\n')
			require.NoError(t, err)
			var resp struct {
				ID     int64 `json:"id"`
				Result struct {
					ProtocolVersion string                     `json:"protocolVersion"`
					ServerInfo      json.RawMessage            `json:"serverInfo"`
					Capabilities    map[string]json.RawMessage `json:"capabilities"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &resp), line)
			assert.Equal(t, int64(1), resp.ID)
			assert.Equal(t, "2025-11-25", resp.Result.ProtocolVersion)
			assert.JSONEq(t, `{"name":"vigil-everything","version":"dev"}`, string(resp.Result.ServerInfo))
			for name, want := range map[string]string{
				"tools": `{"listChanged":true}`, "resources": `{"subscribe":true,"listChanged":true}`,
				"prompts": `{"listChanged":true}`, "logging": `{}`, "completions": `{}`,
			} {
				assert.JSONEq(t, want, string(resp.Result.Capabilities[name]), name)
			}

			if byCancel {
				cancel()
			} else {
				require.NoError(t, inW.Close())
			}
			require.NoError(t, <-done)
			if byCancel {
				assert.Contains(t, stderr.String(), "shutting down")
			}
			_ = inW.Close()
			_ = outR.Close()
		})
	}
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

// The binary serves stdio and exits 0 once its input ends.
func TestBinaryServesStdio(t *testing.T) {
	watchdog(t)
	cmd := exec.Command(everythingBin, "-stdio")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	lines := bufio.NewReader(stdout)
	_, err = io.WriteString(stdin, initializeLine+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text"}}`+"\n")
	require.NoError(t, err)
	for _, want := range []string{`"id":1,"result"`, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"This is a simple text response for testing."}]}}`} {
		line, err := lines.ReadString('\n')
		require.NoError(t, err)
		assert.Contains(t, line, want)
	}
	require.NoError(t, stdin.Close())
	rest, err := io.ReadAll(lines)
	require.NoError(t, err)
	assert.Empty(t, rest)
	require.NoError(t, cmd.Wait(), "exit status must be 0")
}

// watchdog fails a test that hangs, for tests outside a synctest bubble.
func watchdog(t testing.TB) {
	timer := time.AfterFunc(60*time.Second, func() { panic(t.Name() + ": hung for 60s") })
	t.Cleanup(func() { timer.Stop() })
}

// With -allow-public the fixtures serve on every interface.
func TestRunAllowPublic(t *testing.T) {
	u := startHTTPWith(t, nil, "-http", "0.0.0.0:0", "-allow-public")
	u = strings.NewReplacer("0.0.0.0", "127.0.0.1", "[::]", "127.0.0.1").Replace(u)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u, strings.NewReader(initializeLine))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	assert.Equal(t, http.StatusOK, resp.StatusCode, u)
}
