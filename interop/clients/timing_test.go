package clients

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	vigil "github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// timedRounds is how many cuts each client gets in
// TestHandlerEndsWithItsStream.
const timedRounds = 10

// handlerEndBudget is how soon after its stream closes a handler's context
// must be cancelled. What the test measures also holds the client's own
// work between the cut and the close (an event loop's turn; for a killed
// process the time is counted from its reaping, its sockets closing in
// its teardown) and the scheduling of a shared machine: so 9 of 10 cancels, and half the kills,
// must end within the budget, and every cut within handlerEndCeiling. A
// server that waited out a grace before canceling the handler fails
// either way.
const (
	handlerEndBudget  = 100 * time.Millisecond
	handlerEndCeiling = time.Second
)

// timedServer is a Vigil server (the server and streamable packages, as
// cmd/vigil serves them) in this process, whose sleep tool reports when its
// handler starts and when its context ends.
type timedServer struct {
	url     string
	started chan struct{}
	ended   chan time.Time
}

func startTimedServer(t *testing.T) *timedServer {
	t.Helper()
	ts := &timedServer{started: make(chan struct{}, 1), ended: make(chan time.Time, 1)}
	s := vigil.New(vigil.WithImplementation("vigil-timed", "dev"))
	require.NoError(t, s.AddTool(vigil.Tool{
		Name: "sleep", Description: "Waits the given number of milliseconds, or until the call is cancelled.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"required":["ms"],"additionalProperties":false}`),
	}, func(ctx context.Context, req *vigil.CallToolRequest) (*vigil.CallToolResult, error) {
		var in struct {
			MS int `json:"ms"`
		}
		if err := json.Unmarshal(req.Arguments, &in); err != nil {
			return nil, err
		}
		ts.started <- struct{}{}
		timer := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			ts.ended <- time.Now()
			return nil, context.Cause(ctx)
		case <-timer.C:
			return vigil.Text("slept"), nil
		}
	}))
	endpoint := streamable.New(s)
	hs := httptest.NewServer(endpoint)
	t.Cleanup(func() {
		_ = endpoint.Close()
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	ts.url = hs.URL
	return ts
}

// time runs timedRounds calls through start, cuts each cutIn after its
// handler started, and returns how long after each cut the handler's
// context ended.
func (ts *timedServer) time(t *testing.T, start func(t *testing.T) call) []time.Duration {
	t.Helper()
	var ends []time.Duration
	for range timedRounds {
		begun := time.Now()
		c := start(t)
		select {
		case <-ts.started:
		case <-time.After(20 * time.Second):
			t.Fatal("the sleep handler did not start")
		}
		time.Sleep(time.Until(begun.Add(cutIn))) // the scenario: a cut ~300 ms in, not an ordering
		cut := time.Now()
		c.abort()
		var end time.Time
		select {
		case end = <-ts.ended:
		case <-time.After(10 * time.Second):
			t.Fatal("the handler's context was not cancelled within 10s of the cut")
		}
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
			t.Fatal("the client did not finish with its call")
		}
		if c.reaped != nil && c.reaped.After(cut) {
			// A killed process's stream closed in its teardown, which a
			// loaded machine stretches (a Node heap freed first): what
			// the server owes is counted from there, at least 0.
			cut = *c.reaped
			if cut.After(end) {
				cut = end
			}
		}
		ends = append(ends, end.Sub(cut))
	}
	slices.Sort(ends)
	t.Logf("the handler's context ended after the cut in %v (sorted)", ends)
	return ends
}

// TestHandlerEndsWithItsStream: the handler's context is cancelled within
// 100 ms of its stream closing, whatever the cause then recorded: a go-sdk
// cancel (notifications/cancelled, both eras), mcp-go's and the AI SDK's
// bare aborts, the TypeScript SDK v2's cancel, and killed go-sdk, mcp-go
// and AI SDK client processes.
func TestHandlerEndsWithItsStream(t *testing.T) {
	ts := startTimedServer(t)
	self, err := os.Executable()
	require.NoError(t, err)
	node := ""
	npm := func(t *testing.T) string {
		if node == "" {
			node = requireNPM(t)
		}
		return node
	}
	for _, tc := range []struct {
		name  string
		kill  bool
		start func(t *testing.T) func(t *testing.T) call
	}{
		{"go-sdk-cancel-2025-11-25", false, goSDKCanceller(ts.url, "2025-11-25")},
		{"go-sdk-cancel-2026-07-28", false, goSDKCanceller(ts.url, "2026-07-28")},
		{"mcp-go-cancel-2025-11-25", false, mcpGoCanceller(ts.url, "2025-11-25")},
		{"mcp-go-cancel-2026-07-28", false, mcpGoCanceller(ts.url, "2026-07-28")},
		{"ts-v2-cancel-2025-11-25", false, func(t *testing.T) func(t *testing.T) call {
			d := startCutDriver(t, npm(t), "ts-v2", ts.url, "2025-11-25")
			return d.call
		}},
		{"ai-sdk-cancel-2025-11-25", false, func(t *testing.T) func(t *testing.T) call {
			d := startCutDriver(t, npm(t), "ai-sdk", ts.url, "2025-11-25")
			return d.call
		}},
		{"go-sdk-kill-2025-11-25", true, goKiller(self, childGoSDK, ts.url)},
		{"mcp-go-kill-2025-11-25", true, goKiller(self, childMCPGo, ts.url)},
		{"ai-sdk-kill-2025-11-25", true, func(t *testing.T) func(t *testing.T) call {
			node := npm(t)
			return func(t *testing.T) call {
				cmd := exec.Command(node, "cut.mjs", "ai-sdk", ts.url, "2025-11-25")
				cmd.Dir = npmDir
				return startKillable(t, cmd, true, true)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ends := ts.time(t, tc.start(t))
			within := timedRounds * 9 / 10
			if tc.kill {
				within = timedRounds / 2
			}
			assert.LessOrEqual(t, ends[within-1], handlerEndBudget,
				"%d of %d handlers must end within %v of the cut: %v", within, timedRounds, handlerEndBudget, ends)
			assert.LessOrEqual(t, ends[len(ends)-1], handlerEndCeiling, "every handler must end within %v of the cut: %v", handlerEndCeiling, ends)
		})
	}
}

// goSDKCanceller connects a go-sdk client in era and returns a starter of
// sleep calls that it cancels by its context.
func goSDKCanceller(url, era string) func(t *testing.T) func(t *testing.T) call {
	return func(t *testing.T) func(t *testing.T) call {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-timed", Version: "1"}, nil).
			Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: era})
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, cs.Close()) })
		return func(t *testing.T) call {
			return startSleep(t, goSDKSleep(cs))
		}
	}
}

// mcpGoCanceller is goSDKCanceller for mcp-go.
func mcpGoCanceller(url, era string) func(t *testing.T) func(t *testing.T) call {
	return func(t *testing.T) func(t *testing.T) call {
		c, err := mcpclient.NewStreamableHttpClient(url)
		require.NoError(t, err)
		require.NoError(t, c.Start(t.Context()))
		t.Cleanup(func() { assert.NoError(t, c.Close()) })
		init := mcpgo.InitializeRequest{}
		init.Params.ProtocolVersion = era
		init.Params.ClientInfo = mcpgo.Implementation{Name: "mcp-go-timed", Version: "1"}
		_, err = c.Initialize(t.Context(), init)
		require.NoError(t, err)
		return func(t *testing.T) call {
			return startSleep(t, mcpGoSleep(c))
		}
	}
}

// goKiller returns a starter of child client processes (go-sdk or mcp-go,
// 2025 era, standalone GET open) whose abort kills them.
func goKiller(self, child, url string) func(t *testing.T) func(t *testing.T) call {
	return func(*testing.T) func(t *testing.T) call {
		return func(t *testing.T) call {
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), childEnv+"="+child, "VIGIL_CLIENTS_URL="+url, "VIGIL_CLIENTS_ERA=2025-11-25")
			return startKillable(t, cmd, true, false)
		}
	}
}
