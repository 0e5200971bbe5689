package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/cputime"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// stormEnv makes the test binary an upstream of that many tools that says
// its tools changed every stormEvery (runStorm).
const stormEnv = "GATEWAY_TEST_STORM"

// stormEvery is how often the storm upstream says its tools changed: the
// issue's 10 ms.
const stormEvery = 10 * time.Millisecond

// stormEveryEnv, when set, is how often the storm upstream says its
// tools changed instead of stormEvery (a duration).
const stormEveryEnv = "GATEWAY_TEST_STORM_EVERY"

// stormFileEnv, when set, names a file that the storm upstream's
// processes share: "grow" adds a line to it, and each lists a tool more
// for each line ("shared-N"), a list global to the upstream that one
// caller's call changes.
const stormFileEnv = "GATEWAY_TEST_STORM_FILE"

// stormAfterCallEnv, when set, has the storm upstream's processes begin
// saying their tools changed at their first call rather than once
// initialized: a caller's own process does, the listing one does not.
const stormAfterCallEnv = "GATEWAY_TEST_STORM_AFTER_CALL"

// runStorm serves, by hand on standard input and output, stormEnv tools,
// the tool "grow", which adds one ("grown-N", or a line to the
// stormFileEnv file), and "pid", which answers its process id, and sends
// notifications/tools/list_changed every stormEvery (stormEveryEnv) once
// initialized (or called: stormAfterCallEnv), whether its tools changed
// or not. It says "listed N" on standard error at its Nth tools/list, and
// "said PID N" at every 500th list_changed it sent.
func runStorm() int {
	n, _ := strconv.Atoi(os.Getenv(stormEnv))
	every := stormEvery
	if d, err := time.ParseDuration(os.Getenv(stormEveryEnv)); err == nil {
		every = d
	}
	file := os.Getenv(stormFileEnv)
	var mu sync.Mutex // guards out and grown
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		defer mu.Unlock()
		_, _ = out.Write(append(b, '\n'))
		_ = out.Flush()
	}
	afterCall := os.Getenv(stormAfterCallEnv) != ""
	storm := sync.OnceFunc(func() {
		go func() {
			said := 0
			for range time.Tick(every) {
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
				if said++; said%500 == 0 {
					fmt.Fprintf(os.Stderr, "said %s %d\n", testkit.ProcessID(os.Getpid()), said)
				}
			}
		}()
	})
	tool := func(name string) map[string]any {
		return map[string]any{
			"name": name, "description": "tool " + name + " of a catalog that never stops saying it changed",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		}
	}
	tools := []map[string]any{tool("grow"), tool("pid")}
	for i := range n {
		tools = append(tools, tool("t"+strconv.Itoa(i)))
	}
	listed := 0
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil {
			continue
		}
		answer := func(result any) { send(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result}) }
		switch msg.Method {
		case "initialize":
			answer(map[string]any{
				"protocolVersion": protocol.Version20251125, "serverInfo": map[string]any{"name": "storm", "version": "1"},
				"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}},
			})
		case "notifications/initialized":
			if !afterCall {
				storm()
			}
		case "tools/list":
			listed++
			fmt.Fprintf(os.Stderr, "listed %d\n", listed)
			mu.Lock()
			now := tools
			mu.Unlock()
			if file != "" {
				grown, _ := os.ReadFile(file)
				for i := range bytes.Count(grown, []byte("\n")) {
					now = append(now[:len(now):len(now)], tool("shared-"+strconv.Itoa(i+1)))
				}
			}
			answer(map[string]any{"tools": now})
		case "tools/call":
			var call struct {
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			_ = json.Unmarshal(in.Bytes(), &call)
			if afterCall {
				storm()
			}
			text := "grown"
			switch {
			case call.Params.Name == "pid":
				text = testkit.ProcessID(os.Getpid())
			case file != "":
				f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
				if err == nil {
					_, _ = f.WriteString("grown\n")
					_ = f.Close()
				}
			default:
				mu.Lock()
				tools = append(tools[:len(tools):len(tools)], tool("grown-"+strconv.Itoa(len(tools))))
				mu.Unlock()
			}
			answer(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
		default:
			if len(msg.ID) > 0 {
				answer(map[string]any{})
			}
		}
	}
	return 0
}

// stormUpstream mounts the storm upstream of tools tools, shared (the
// process listed is the one called), its stderr lines collected in said.
func stormUpstream(t testing.TB, tools int, said *upstreamSaid) (*server.Server, *gateway.Gateway) {
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{
		Upstreams: []gateway.Upstream{{Name: "storm", Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{stormEnv + "=" + strconv.Itoa(tools), "GORACE=atexit_sleep_ms=0"}, Shared: true}},
		Logger:    slog.New(slog.NewJSONHandler(said, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	return srv, g
}

// listChangedCounter counts the tools/list_changed notifications the
// server writes to one session.
type listChangedCounter struct {
	transport.Conn
	n    atomic.Int64
	told chan struct{} // 1-buffered: one was written
}

func (c *listChangedCounter) Write(ctx context.Context, m transport.Message) error {
	if r, ok := m.(*transport.Request); ok && r.Method == "notifications/tools/list_changed" {
		c.n.Add(1)
		select {
		case c.told <- struct{}{}:
		default:
		}
	}
	return c.Conn.Write(ctx, m)
}

// TestListChangedStormTellsOnlyWhatChanged: an upstream of 200 tools
// says list_changed every 10 ms. It is listed again at most once a
// second, and a downstream session is told nothing while the list stays
// the same; once a tool is added, it is told, and sees it.
func TestListChangedStormTellsOnlyWhatChanged(t *testing.T) {
	testkit.Watchdog(t)
	said := newUpstreamSaid()
	srv, _ := stormUpstream(t, 200, said)
	counter := &listChangedCounter{told: make(chan struct{}, 1)}
	c := mcptest.Connect(t, srv, mcptest.WithServerConn(func(conn transport.Conn) transport.Conn {
		counter.Conn = conn
		return counter
	}))
	require.Len(t, c.ListTools(), 202)

	// Two listings after the client came, the second at least a second
	// after the first: whatever the first registered was told by then.
	n := lastListed(t, said)
	start := time.Now()
	said.await(t, "listed "+strconv.Itoa(n+3))
	took := time.Since(start)
	_, rpcErr := c.Call("ping", nil) // after every notification written before it
	require.Nil(t, rpcErr)
	assert.Zero(t, counter.n.Load(), "list_changed told while the list did not change")
	t.Logf("3 listings in %v under a %v storm (at most one per second after the first)", took, stormEvery)
	assert.GreaterOrEqual(t, took, time.Second, "listed again at most once a second")

	require.Equal(t, "grown", c.CallTool("grow", nil).Text())
	<-counter.told
	assert.Contains(t, toolNames(c), "grown-202", "the new tool is served once told")
}

// BenchmarkListChangedStorm measures the gateway's CPU while an upstream
// of 2,000 tools says list_changed every 10 ms, with a client connected:
// cores is the process's CPU time (getrusage: the upstream, a process of
// its own, is not in it) over the wall time. Each iteration lasts until
// the upstream is listed once more.
func BenchmarkListChangedStorm(b *testing.B) {
	said := newUpstreamSaid()
	srv, _ := stormUpstream(b, 2000, said)
	c := mcptest.Connect(b, srv)
	require.Len(b, c.ListTools(), 2002)
	n := lastListed(b, said)
	said.await(b, "listed "+strconv.Itoa(n+1)) // the first listing of the storm, at once
	n++
	cpu, start := cputime.Process(), time.Now()
	for b.Loop() {
		n++
		said.await(b, "listed "+strconv.Itoa(n))
	}
	wall := time.Since(start)
	b.ReportMetric(float64(cputime.Process()-cpu)/float64(wall), "cores")
	b.ReportMetric(float64(wall/stormEvery)/float64(b.N), "notifications/op")
}

// lastListed returns the number of the storm upstream's last listing so
// far.
func lastListed(t testing.TB, said *upstreamSaid) int {
	n := 0
	for _, l := range said.all() {
		if v, ok := strings.CutPrefix(l, "listed "); ok {
			i, err := strconv.Atoi(v)
			require.NoError(t, err)
			n = max(n, i)
		}
	}
	return n
}

// TestOwnSessionStormTellsNothing: a caller's own upstream session (its
// own process) says list_changed every millisecond while nothing changes:
// the caller is told nothing, however many it says (the gateway
// told one session 694 times in 10 s). Once a call through that session
// changes the list the upstream's processes share, the upstream is listed
// again, though only that session said so (the listing process says
// nothing), and the caller is told once, and sees the new tool.
func TestOwnSessionStormTellsNothing(t *testing.T) {
	testkit.Watchdog(t)
	file := t.TempDir() + "/grown"
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	said := newUpstreamSaid()
	srv := server.New()
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{
		Upstreams: []gateway.Upstream{{
			Name: "storm", Command: []string{os.Args[0], "-test.run=^$"},
			Env:     []string{stormEnv + "=20", stormEveryEnv + "=1ms", stormFileEnv + "=" + file, stormAfterCallEnv + "=1", "GORACE=atexit_sleep_ms=0"},
			Sandbox: gateway.Sandbox{Write: []string{filepath.Dir(file)}}, // the file its processes share
		}},
		Logger: slog.New(slog.NewJSONHandler(said, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = g.Close(), srv.Close() })
	counter := &listChangedCounter{told: make(chan struct{}, 1)}
	c := mcptest.Connect(t, srv, mcptest.WithServerConn(func(conn transport.Conn) transport.Conn {
		counter.Conn = conn
		return counter
	}))
	require.Len(t, c.ListTools(), 22)

	own := c.CallTool("pid", nil).Text() // the caller's own process
	said.await(t, "said "+own+" 2000")   // it said list_changed 2,000 times since
	_, rpcErr := c.Call("ping", nil)     // after every notification written before it
	require.Nil(t, rpcErr)
	assert.Zero(t, counter.n.Load(), "list_changed told while the list did not change")

	require.Equal(t, "grown", c.CallTool("grow", nil).Text())
	<-counter.told
	assert.Contains(t, toolNames(c), "shared-1", "the new tool is served once told")
	_, rpcErr = c.Call("ping", nil)
	require.Nil(t, rpcErr)
	assert.Equal(t, int64(1), counter.n.Load(), "told once")
}
