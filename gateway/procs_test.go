package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// slowListEnv makes the test binary a stdio upstream that takes this long
// to list its tools and shows each by its client's capabilities
// (runSlowLister); aliveEnv names the address it connects to for as long
// as it lives.
const (
	slowListEnv = "GATEWAY_TEST_SLOW_LIST"
	aliveEnv    = "GATEWAY_TEST_ALIVE"
)

// runSlowLister serves, on standard input and output, the tools "plain",
// "roots" (to a client that declares roots), "sample" (sampling),
// "elicit-form" (form elicitation), "elicit-url" (URL elicitation), "ui"
// (MCP Apps) and "sample-roots" (both), listing them after slowListEnv.
// It holds a connection to aliveEnv open until it exits.
func runSlowLister() int {
	if c, err := net.Dial("tcp", os.Getenv(aliveEnv)); err == nil {
		defer func() { _ = c.Close() }()
	}
	delay, _ := time.ParseDuration(os.Getenv(slowListEnv))
	srv := server.New(server.WithToolAccess(func(req *server.Request, tool *server.Tool) bool {
		return shownTo(&req.ClientCapabilities)[tool.Name]
	}), server.WithMiddleware(func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "tools/list" {
				time.Sleep(delay)
			}
			return next(ctx, req)
		}
	}))
	for _, name := range slowListerTools {
		_ = srv.AddTool(server.Tool{Name: name}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(name), nil
		})
	}
	if err := srv.Serve(context.Background(), stdio.Std()); err != nil {
		return 1
	}
	return 0
}

// slowListerTools are runSlowLister's tools, in the order it lists them.
var slowListerTools = []string{"plain", "roots", "sample", "elicit-form", "elicit-url", "ui", "sample-roots"}

// shownTo returns which of slowListerTools runSlowLister shows a client of caps.
func shownTo(caps *server.ClientCapabilities) map[string]bool {
	e := caps.Elicitation
	_, ui := caps.Extensions[server.ExtensionUI]
	return map[string]bool{
		"plain":        true,
		"roots":        caps.Roots != nil,
		"sample":       caps.Sampling != nil,
		"elicit-form":  e != nil && (e.Form != nil || e.URL == nil),
		"elicit-url":   e != nil && e.URL != nil,
		"ui":           ui,
		"sample-roots": caps.Sampling != nil && caps.Roots != nil,
	}
}

// capabilityCombinations returns the 100 combinations of roots, sampling
// (and its context and tools), elicitation (and its modes) and MCP Apps a
// client may declare, each as the client declares it.
func capabilityCombinations() []map[string]any {
	samplings := []map[string]any{nil, {}, {"context": map[string]any{}}, {"tools": map[string]any{}}, {"context": map[string]any{}, "tools": map[string]any{}}}
	elicitations := []map[string]any{nil, {}, {"form": map[string]any{}}, {"url": map[string]any{}}, {"form": map[string]any{}, "url": map[string]any{}}}
	var out []map[string]any
	for _, roots := range []bool{false, true} {
		for _, s := range samplings {
			for _, e := range elicitations {
				for _, ui := range []bool{false, true} {
					caps := map[string]any{}
					if roots {
						caps["roots"] = map[string]any{}
					}
					if s != nil {
						caps["sampling"] = s
					}
					if e != nil {
						caps["elicitation"] = e
					}
					if ui {
						caps["extensions"] = map[string]any{server.ExtensionUI: map[string]any{"mimeTypes": []string{server.ViewMIMEType}}}
					}
					out = append(out, caps)
				}
			}
		}
	}
	return out
}

// aliveCounter counts the processes connected to it at once, and the most
// ever.
type aliveCounter struct {
	ln   net.Listener
	mu   sync.Mutex
	now  int
	peak int
	done sync.WaitGroup
}

// newAliveCounter listens on loopback until the test ends.
func newAliveCounter(t *testing.T) *aliveCounter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a := &aliveCounter{ln: ln}
	a.done.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.mu.Lock()
			a.now++
			a.peak = max(a.peak, a.now)
			a.mu.Unlock()
			a.done.Go(func() {
				_, _ = bufio.NewReader(c).ReadByte() // until the process exits
				_ = c.Close()
				a.mu.Lock()
				a.now--
				a.mu.Unlock()
			})
		}
	})
	return a
}

// stop stops counting once every process has exited, and returns the
// most alive at once.
func (a *aliveCounter) stop() int {
	_ = a.ln.Close()
	a.done.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peak
}

// TestViewsWithinTheProcessBound: 100 callers, each of another
// combination of capabilities, list the tools of a stdio upstream that
// takes 200 ms to list, at once: each is answered with what the upstream
// shows a client of its capabilities, and no more processes are alive at
// once than MaxProcesses and the listing session's (with Shared, only
// that one). Before, each combination was listed on a process of its
// own, outside the bound: 100 processes, most alive at once.
func TestViewsWithinTheProcessBound(t *testing.T) {
	testkit.Watchdog(t)
	for _, shared := range []bool{false, true} {
		t.Run("shared="+strconv.FormatBool(shared), func(t *testing.T) {
			const maxProcesses = 2
			alive := newAliveCounter(t)
			srv := server.New()
			g, err := gateway.Mount(t.Context(), srv, gateway.Config{
				Upstreams: []gateway.Upstream{{
					Name: "slow", Command: []string{os.Args[0], "-test.run=^$"}, Shared: shared,
					Env: []string{slowListEnv + "=200ms", aliveEnv + "=" + alive.ln.Addr().String(), "GORACE=atexit_sleep_ms=0"},
				}},
				MaxProcesses: maxProcesses,
			})
			require.NoError(t, err)
			<-g.Settled(0)

			combos := capabilityCombinations()
			require.Len(t, combos, 100)
			got := make([][]string, len(combos))
			var wg sync.WaitGroup
			for i, caps := range combos {
				c := mcptest.Connect(t, srv, mcptest.WithCapabilities(caps))
				wg.Go(func() { got[i] = toolNames(c) })
			}
			wg.Wait()
			_, _ = g.Close(), srv.Close()
			peak := alive.stop()

			for i, caps := range combos {
				var want []string
				if shared {
					want = slowListerTools // what the shared process, which declares every capability, lists
				} else {
					var declared server.ClientCapabilities
					raw, err := json.Marshal(caps)
					require.NoError(t, err)
					require.NoError(t, json.Unmarshal(raw, &declared))
					shown := shownTo(&declared)
					for _, name := range slowListerTools {
						if shown[name] {
							want = append(want, name)
						}
					}
				}
				assert.Equal(t, want, got[i], "capabilities %v", caps)
			}
			bound := maxProcesses + 1
			if shared {
				bound = 1
			}
			t.Logf("shared=%v: at most %d processes alive at once (bound %d)", shared, peak, bound)
			assert.LessOrEqual(t, peak, bound, "processes alive at once")
		})
	}
}

// TestProcessShare: with MaxProcesses 4 and a share of half, one caller
// opens 6 sessions and calls once in each: it holds the 4 processes (none
// other is waiting), its fifth and sixth sessions are refused. Another
// caller's first call is then served, not refused, on a process
// reclaimed from the first caller's idle ones, which has exited by then;
// and the first caller, over its share, is refused another. (The time it
// takes is measured through vigil: TestGatewayProcessShare.) Before, the other caller was refused
// ("its 4 processes all serve other sessions").
func TestProcessShare(t *testing.T) {
	testkit.Watchdog(t)
	up := testUpstream()
	up.Env = append(up.Env, "GORACE=atexit_sleep_ms=0") // a reclaimed process exits at once
	srv, g := mountWith(t, gateway.Config{
		Upstreams: []gateway.Upstream{up}, MaxProcesses: 4, ProcessShare: 0.5,
		Caller: func(req *server.Request) string { return req.Session.ClientInfo().Name },
	})
	of := func(caller string) *mcptest.Client {
		return mcptest.Connect(t, srv, mcptest.WithClientInfo(caller, "1"))
	}
	heavy := make([]*mcptest.Client, 6)
	pids := map[int]bool{}
	for i := range heavy {
		heavy[i] = of("heavy")
		if i < 4 {
			pids[pidOf(t, heavy[i])] = true
			continue
		}
		_, rpcErr := heavy[i].Call("tools/call", map[string]any{"name": "pid"})
		require.NotNil(t, rpcErr, "session %d: beyond the bound, and its caller holds more than its share", i)
		assert.Contains(t, rpcErr.Message, "its 4 processes all serve other sessions")
	}
	require.Len(t, pids, 4)

	start := time.Now()
	other := pidOf(t, of("other"))
	t.Logf("the other caller's first call was served in %v", time.Since(start))
	assert.False(t, pids[other], "a process of its own")
	exited := 0
	for pid := range pids {
		if !alive(pid) {
			exited++
		}
	}
	assert.Equal(t, 1, exited, "one of the heavy caller's processes ended, and exited before the other's started")

	_, rpcErr := of("heavy").Call("tools/call", map[string]any{"name": "pid"})
	require.NotNil(t, rpcErr, "the heavy caller holds more than its share: nothing is reclaimed for it")
	alive := 0
	for _, c := range heavy[:4] {
		raw, rpcErr := c.Call("tools/call", map[string]any{"name": "pid"})
		if rpcErr == nil {
			alive++
			assert.True(t, pids[atoiText(t, raw)], "its own process still")
		}
	}
	assert.Equal(t, 3, alive, "one of the heavy caller's processes was reclaimed; its session's next call is refused at the bound")
	_, refused := g.Counts(0)
	assert.Equal(t, int64(4), refused)
}

// atoiText returns the number a tools/call result's text holds.
func atoiText(t *testing.T, raw json.RawMessage) int {
	t.Helper()
	n, err := testkit.HostPID(textOf(t, raw))
	require.NoError(t, err)
	return n
}
