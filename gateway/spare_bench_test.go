package gateway_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// nodeEverything returns the command of the pinned node server-everything
// (cmd/vigil/testdata/everything, `make everything-deps`), or skips.
func nodeEverything(b *testing.B) []string {
	testkit.External(b, "node and @modelcontextprotocol/server-everything")
	node, err := exec.LookPath("node")
	if err != nil {
		b.Skip("node is not installed")
	}
	entry, err := filepath.Abs(filepath.Join("..", "cmd", "vigil", "testdata", "everything", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	require.NoError(b, err)
	if _, err := os.Stat(entry); err != nil {
		b.Skip("server-everything is not installed: make everything-deps")
	}
	return []string{node, entry}
}

// firstCallSessions is how many new sessions BenchmarkFirstCallNode
// measures, and sessionsApart how long after the previous one (and, with
// the spare, after its spare answered) each one comes: sessions arriving
// now and then, not all at once.
const (
	firstCallSessions = 20
	sessionsApart     = 300 * time.Millisecond
)

// BenchmarkFirstCallNode measures what a new session's first call waits
// for its stdio upstream's process, in front of the node server-everything:
// 20 sessions one after the other, each calling echo twice; the wait is
// the first call's time less the second's (the call itself), the median of
// the 20, with the spare process (spare.go) and, in the same run, without
// it (each first call spawns node):
//
//	go test -run '^$' -bench FirstCallNode -benchtime 1x ./gateway
func BenchmarkFirstCallNode(b *testing.B) {
	argv := nodeEverything(b)
	for b.Loop() {
		with := firstCallWaits(b, argv, true)
		without := firstCallWaits(b, argv, false)
		b.ReportMetric(median(with), "wait-ms")
		b.ReportMetric(median(without), "wait-no-spare-ms")
		b.Logf("first-call wait, ms, with the spare: %.1f", with)
		b.Logf("first-call wait, ms, without it:     %.1f", without)
	}
}

// firstCallWaits returns each session's first-call wait in milliseconds.
func firstCallWaits(b *testing.B, argv []string, spare bool) []float64 {
	spares := make(chan int, firstCallSessions+2)
	cfg := gateway.Config{Upstreams: []gateway.Upstream{{Name: "e", Command: argv}}}
	cfg = gateway.WithSpareHook(cfg, func(pid int) { spares <- pid })
	if !spare {
		cfg = gateway.WithoutSpare(cfg)
	}
	srv := server.New()
	g, err := gateway.Mount(b.Context(), srv, cfg)
	require.NoError(b, err)
	defer func() { _, _ = g.Close(), srv.Close() }()
	args := map[string]any{"message": "hi"}
	waits := make([]float64, 0, firstCallSessions)
	for range firstCallSessions {
		if spare {
			<-spares
		}
		time.Sleep(sessionsApart) // the next session comes later: not a synchronization
		c := mcptest.Connect(b, srv)
		start := time.Now()
		require.Equal(b, "Echo: hi", c.CallTool("echo", args).Text())
		first := time.Since(start)
		start = time.Now()
		require.Equal(b, "Echo: hi", c.CallTool("echo", args).Text())
		waits = append(waits, float64(first-time.Since(start))/float64(time.Millisecond))
		require.NoError(b, c.Close())
	}
	return waits
}

// median returns the median of xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
