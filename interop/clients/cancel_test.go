package clients

import (
	"bufio"
	"context"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rounds is how many deliberate cancels, or killed client processes, each
// client gets.
const rounds = 20

// Causes of mcp_server_cancellations_total (see docs/operations.md).
const (
	causeClientCancel   = "client_cancel"
	causeStreamClose    = "stream_close"
	causeTransportClose = "transport_close"
)

// cutIn is how long into a call the client cancels it.
const cutIn = 300 * time.Millisecond

// call is one sleep call in flight, started by a client: abort cancels it
// the client's way (or kills the client), done is closed once the client
// is finished with it.
type call struct {
	abort func()
	done  <-chan struct{}
	// reaped, for a killed process, is when it was reaped, read after
	// done: its sockets close in its teardown, after its memory is
	// freed, so its stream closed then, not at the kill.
	reaped *time.Time
}

// startSleep starts a call of vigil's sleep tool through callSleep on a
// goroutine of its own: its abort cancels the call's context, and done is
// closed once the client returned context.Canceled.
func startSleep(t *testing.T, callSleep func(ctx context.Context) error) call {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.ErrorIs(t, callSleep(ctx), context.Canceled)
	}()
	return call{abort: cancel, done: done}
}

// goSDKSleep calls sleep for a minute in cs.
func goSDKSleep(cs *mcp.ClientSession) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}})
		return err
	}
}

// mcpGoSleep calls sleep for a minute with c.
func mcpGoSleep(c *mcpclient.Client) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "sleep"
		req.Params.Arguments = map[string]any{"ms": 60000}
		_, err := c.CallTool(ctx, req)
		return err
	}
}

// cutCalls runs rounds calls of vigil's sleep tool through start, cuts each
// cutIn after it started (once the live page lists it in flight), and
// checks that each was recorded with the cause want. (How soon the handler
// ends is TestHandlerEndsWithItsStream's: the live page lists a request
// until its outcome is sealed, which may wait for its cause to settle.)
func cutCalls(t *testing.T, srv server, want string, start func(t *testing.T) call) {
	t.Helper()
	before := srv.causes(t)
	total := func(m map[string]int) int {
		n := 0
		for _, v := range m {
			n += v
		}
		return n
	}
	var ends []time.Duration
	for round := range rounds {
		begun := time.Now()
		c := start(t)
		waitFor(t, 20*time.Second, "the sleep call in flight on the live page", func() bool { return len(srv.sleepsInFlight(t)) == 1 })
		time.Sleep(time.Until(begun.Add(cutIn))) // the scenario: a cut ~300 ms in, not an ordering
		cut := time.Now()
		c.abort()
		waitFor(t, 10*time.Second, "the sleep call gone from the live page", func() bool { return len(srv.sleepsInFlight(t)) == 0 })
		ends = append(ends, time.Since(cut))
		waitFor(t, 15*time.Second, "the cancellation counted", func() bool { return total(srv.causes(t)) == total(before)+round+1 })
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: the client did not finish with its call", round)
		}
	}
	after := srv.causes(t)
	delta := map[string]int{}
	for cause, n := range after {
		if d := n - before[cause]; d != 0 {
			delta[cause] = d
		}
	}
	slices.Sort(ends)
	t.Logf("causes of %d cuts: %v; the live page dropped the call after the cut in %v (sorted)", rounds, delta, ends)
	assert.Equal(t, map[string]int{want: rounds}, delta, "recorded causes")
}

// TestCancelGoSDK: go-sdk cancels the caller's context, which aborts the
// POST and sends notifications/cancelled: client_cancel, in both eras.
func TestCancelGoSDK(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	srv := startServer(t, vigilBin)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-cancel", Version: "1"}, nil)
			cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.mcp}, &mcp.ClientSessionOptions{ProtocolVersion: era})
			require.NoError(t, err)
			defer func() { assert.NoError(t, cs.Close()) }()
			cutCalls(t, srv, causeClientCancel, func(t *testing.T) call {
				return startSleep(t, goSDKSleep(cs))
			})
		})
	}
}

// TestCancelMCPGo: mcp-go over HTTP aborts the request and sends no
// notifications/cancelled: stream_close (in 2026, a bare close), never
// transport_close.
func TestCancelMCPGo(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	srv := startServer(t, vigilBin)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			c, err := mcpclient.NewStreamableHttpClient(srv.mcp)
			require.NoError(t, err)
			require.NoError(t, c.Start(t.Context()))
			defer func() { assert.NoError(t, c.Close()) }()
			init := mcpgo.InitializeRequest{}
			init.Params.ProtocolVersion = era
			init.Params.ClientInfo = mcpgo.Implementation{Name: "mcp-go-cancel", Version: "1"}
			res, err := c.Initialize(t.Context(), init)
			require.NoError(t, err)
			require.Equal(t, era, res.ProtocolVersion)
			cutCalls(t, srv, causeStreamClose, func(t *testing.T) call {
				return startSleep(t, mcpGoSleep(c))
			})
		})
	}
}

// TestKillGoClients kills go-sdk and mcp-go client processes mid-call,
// each with its standalone GET stream open (mcp-go with continuous
// listening) in a 2025 session: transport_close. A killed go-sdk process
// in the 2026 era left nothing but its request's stream, so there it is a
// bare close: stream_close.
func TestKillGoClients(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	srv := startServer(t, vigilBin)
	for _, tc := range []struct{ child, era, want string }{
		{childGoSDK, "2025-11-25", causeTransportClose},
		{childMCPGo, "2025-11-25", causeTransportClose},
		{childGoSDK, "2026-07-28", causeStreamClose},
	} {
		t.Run(tc.child+"-"+tc.era, func(t *testing.T) {
			self, err := os.Executable()
			require.NoError(t, err)
			cutCalls(t, srv, tc.want, func(t *testing.T) call {
				cmd := exec.Command(self)
				cmd.Env = append(os.Environ(), childEnv+"="+tc.child, "VIGIL_CLIENTS_URL="+srv.mcp, "VIGIL_CLIENTS_ERA="+tc.era)
				return startKillable(t, cmd, tc.era == "2025-11-25", false)
			})
		})
	}
}

// startKillable starts a client process cmd that says "calling" (and
// "get-open" first when withGET) on stdout, waits for those lines, and
// returns its call, whose abort kills it with SIGKILL. With trigger, the
// process says "ready" first and starts its call when it reads "call" on
// its stdin (testdata/npm/cut.mjs).
func startKillable(t *testing.T, cmd *exec.Cmd, withGET, trigger bool) call {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	lines := make(chan string, 4)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	await := func(want map[string]bool) {
		deadline := time.After(30 * time.Second)
		for len(want) > 0 {
			select {
			case line, ok := <-lines:
				if !ok {
					_ = cmd.Wait()
					t.Fatalf("the client process ended before it said %v: %s", slices.Collect(maps.Keys(want)), stderr.String())
				}
				delete(want, line)
			case <-deadline:
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("the client process did not say %v within 30s: %s", slices.Collect(maps.Keys(want)), stderr.String())
			}
		}
	}
	first := map[string]bool{}
	if withGET {
		first["get-open"] = true
	}
	if trigger {
		first["ready"] = true
		await(first)
		_, err := io.WriteString(stdin, "call\n")
		require.NoError(t, err)
		await(map[string]bool{"calling": true})
	} else {
		first["calling"] = true
		await(first)
	}
	done := make(chan struct{})
	var reaped time.Time
	return call{
		abort: func() {
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			go func() {
				defer close(done)
				for range lines { // drain
				}
				_ = cmd.Wait()
				reaped = time.Now()
			}()
		},
		done:   done,
		reaped: &reaped,
	}
}
