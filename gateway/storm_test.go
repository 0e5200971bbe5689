package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
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

// runStorm serves, by hand on standard input and output, stormEnv tools
// and the tool "grow", which adds one ("grown-N"), and sends
// notifications/tools/list_changed every stormEvery once initialized,
// whether its tools changed or not. It says "listed N" on standard error
// at its Nth tools/list.
func runStorm() int {
	n, _ := strconv.Atoi(os.Getenv(stormEnv))
	var mu sync.Mutex // guards out and grown
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		defer mu.Unlock()
		_, _ = out.Write(append(b, '\n'))
		_ = out.Flush()
	}
	tool := func(name string) map[string]any {
		return map[string]any{
			"name": name, "description": "tool " + name + " of a catalog that never stops saying it changed",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}},
		}
	}
	tools := []map[string]any{tool("grow")}
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
			go func() {
				for range time.Tick(stormEvery) {
					send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
				}
			}()
		case "tools/list":
			listed++
			fmt.Fprintf(os.Stderr, "listed %d\n", listed)
			mu.Lock()
			now := tools
			mu.Unlock()
			answer(map[string]any{"tools": now})
		case "tools/call":
			mu.Lock()
			tools = append(tools[:len(tools):len(tools)], tool("grown-"+strconv.Itoa(len(tools))))
			mu.Unlock()
			answer(map[string]any{"content": []any{map[string]any{"type": "text", "text": "grown"}}})
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
	require.Len(t, c.ListTools(), 201)

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
	assert.Contains(t, toolNames(c), "grown-201", "the new tool is served once told")
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
	require.Len(b, c.ListTools(), 2001)
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
