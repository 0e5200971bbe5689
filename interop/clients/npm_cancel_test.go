package clients

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/issuertest"
)

// cutDriver is testdata/npm/cut.mjs running one npm client against vigil.
type cutDriver struct {
	stdin io.WriteCloser
	lines chan string
}

// startCutDriver starts cut.mjs for the client which at url in era, and
// waits until it is ready.
func startCutDriver(t *testing.T, node, which, url, era string) *cutDriver {
	t.Helper()
	cmd := exec.Command(node, "cut.mjs", which, url, era)
	cmd.Dir = npmDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	d := &cutDriver{stdin: stdin, lines: make(chan string, 16)}
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case err := <-exited:
			assert.NoError(t, err, "cut.mjs %s: %s", which, stderr.String())
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("cut.mjs %s did not exit once its input ended: %s", which, stderr.String())
		}
	})
	require.Equal(t, "ready", d.next(t), "cut.mjs %s: %s", which, stderr.String())
	return d
}

// next returns the driver's next line but "get-open", which comes when the
// client's standalone stream opens, before or after "ready".
func (d *cutDriver) next(t *testing.T) string {
	t.Helper()
	for {
		select {
		case line, ok := <-d.lines:
			require.True(t, ok, "cut.mjs ended")
			if line != "get-open" {
				return line
			}
		case <-time.After(30 * time.Second):
			t.Fatal("cut.mjs said nothing within 30s")
			return ""
		}
	}
}

func (d *cutDriver) say(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(d.stdin, line+"\n")
	require.NoError(t, err)
}

// call starts a sleep call through the driver; abort aborts it the
// client's way, and done is closed once the client reported the abort.
func (d *cutDriver) call(t *testing.T) call {
	d.say(t, "call")
	require.Equal(t, "calling", d.next(t))
	done := make(chan struct{})
	return call{
		abort: func() {
			d.say(t, "abort")
			go func() {
				defer close(done)
				for line := range d.lines {
					if line != "get-open" {
						assert.True(t, strings.HasPrefix(line, "aborted "), "the client reports the aborted call: %q", line)
						return
					}
				}
				t.Error("cut.mjs ended before it reported the aborted call")
			}()
		},
		done: done,
	}
}

// TestCancelNPM cancels sleep calls with the npm clients' own abort (an
// AbortSignal): the TypeScript SDK v2 and LangChain (the SDK v1 under it)
// send notifications/cancelled in a 2025 session: client_cancel; the SDK v2
// sends none for a 2026-07-28 HTTP request, whose close is the cancel
// there, and the AI SDK sends none in either era: stream_close.
func TestCancelNPM(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	node := requireNPM(t)
	srv := startServer(t, vigilBin)
	for _, tc := range []struct{ client, era, want string }{
		{"ts-v2", "2025-11-25", causeClientCancel},
		{"ts-v2", "2026-07-28", causeStreamClose},
		{"ai-sdk", "2025-11-25", causeStreamClose},
		{"ai-sdk", "2026-07-28", causeStreamClose},
		{"langchain", "2025-11-25", causeClientCancel},
	} {
		t.Run(tc.client+"-"+tc.era, func(t *testing.T) {
			d := startCutDriver(t, node, tc.client, srv.mcp, tc.era)
			cutCalls(t, srv, tc.want, d.call)
		})
	}
}

// TestKillNPM kills the TypeScript SDK v2 and AI SDK client processes
// mid-call in a 2025 session, each with its standalone GET stream open:
// transport_close.
func TestKillNPM(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	node := requireNPM(t)
	srv := startServer(t, vigilBin)
	for _, client := range []string{"ts-v2", "ai-sdk"} {
		t.Run(client+"-2025-11-25", func(t *testing.T) {
			cutCalls(t, srv, causeTransportClose, func(t *testing.T) call {
				cmd := exec.Command(node, "cut.mjs", client, srv.mcp, "2025-11-25")
				cmd.Dir = npmDir
				return startKillable(t, cmd, true, true)
			})
		})
	}
}

// TestCancelMCPRemote: a desktop host cancels a call through mcp-remote
// with notifications/cancelled, which mcp-remote forwards upstream while
// the call's own stream stays open: client_cancel, in the 2025 era
// (--protocol legacy) and the 2026 one (--protocol auto) with a bearer
// token, whose principal vouches that the cancel is the caller's own.
func TestCancelMCPRemote(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	node := requireNPM(t)
	as := issuertest.Start(t)
	srv := startServer(t, vigilBin)
	authed := startServer(t, vigilBin, "-auth-issuer", as.URL, "-auth-resource", "http://mcp.example/mcp")
	for _, tc := range []struct {
		protocol string
		srv      server
		header   []string
	}{
		{"legacy", srv, nil},
		{"auto", authed, []string{"--header", "Authorization: Bearer " + as.Token(t, "http://mcp.example/mcp", "ada")}},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			h := startMCPRemote(t, node, tc.srv.mcp, tc.protocol, tc.header...)
			h.initialize()
			cutCalls(t, tc.srv, causeClientCancel, func(*testing.T) call {
				id, _ := h.start("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 60000}})
				done := make(chan struct{})
				return call{
					abort: func() {
						h.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": id, "reason": "the user pressed stop"}})
						close(done) // a cancelled request gets no answer
					},
					done: done,
				}
			})
		})
	}
}

// TestCancelMCPRemoteWithoutToken: in the 2026-07-28 era without
// authorization, nothing tells mcp-remote's notifications/cancelled, sent
// while the call's stream stays open, from one another client at the same
// address sent: the call is not ended by it, and is answered; the
// notification is counted (cancel_unproven).
func TestCancelMCPRemoteWithoutToken(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	node := requireNPM(t)
	srv := startServer(t, vigilBin)
	h := startMCPRemote(t, node, srv.mcp, "auto")
	h.initialize()
	before := srv.rejected(t, "cancel_unproven")
	id, answer := h.start("tools/call", map[string]any{"name": "sleep", "arguments": map[string]any{"ms": 1500}})
	waitFor(t, 20*time.Second, "the sleep call in flight on the live page", func() bool { return len(srv.sleepsInFlight(t)) == 1 })
	h.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": id, "reason": "the user pressed stop"}})
	waitFor(t, 20*time.Second, "the sleep call answered", func() bool { return len(srv.sleepsInFlight(t)) == 0 })
	waitFor(t, 10*time.Second, "the notification counted", func() bool { return srv.rejected(t, "cancel_unproven") == before+1 })
	_ = answer // mcp-remote drops the answer of a call its host cancelled
}
