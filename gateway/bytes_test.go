package gateway_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/internal/testkit/hostiletest"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// mountHostile mounts the hostile stdio upstream "bad" (hostiletest.Upstream), as
// up describes it besides, on a server made with opts.
func mountHostile(t *testing.T, up gateway.Upstream, env []string, opts ...server.Option) (*server.Server, *gateway.Gateway, *prometheus.Registry, *syncBuffer) {
	t.Helper()
	up.Name, up.Command = "bad", []string{os.Args[0], "-test.run=^$"}
	up.Env = append(slices.Clip(env), hostileEnv+"=1")
	srv := server.New(opts...)
	t.Cleanup(func() { _ = srv.Close() })
	reg := prometheus.NewRegistry()
	var logs syncBuffer
	g, err := gateway.Mount(t.Context(), srv, gateway.Config{
		Upstreams: []gateway.Upstream{up}, Registerer: reg, Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = g.Close() })
	return srv, g, reg, &logs
}

// TestSixteenMiBResult (issue 67): a 16 MiB result of a stdio upstream
// passes with the upstream's bound raised, and fails only its call with
// the default bound, whether its id comes before its result or last (as
// the TypeScript SDK writes it), with an error naming the bound and the
// flag; in both cases the same process serves the next call. With the
// upstream's bound raised but not the server's result bound, the
// server's bound fails the call.
func TestSixteenMiBResult(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bound     int
		maxResult int    // the server's bound on a result; 0: its default, 4 MiB
		want      string // the error's message holds it; "" when the result passes
	}{
		{name: "default bound", maxResult: 32 << 20, want: "over the gateway's bound on a message of an upstream, 4194304 bytes (Upstream.MaxMessageBytes; vigil -upstream-max-message)"},
		{name: "bound raised", bound: 32 << 20, maxResult: 32 << 20},
		{name: "result bound not raised", bound: 32 << 20, want: "result too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.Watchdog(t) // each subtest: under -race, one takes 15 s
			var opts []server.Option
			if tc.maxResult != 0 {
				opts = append(opts, server.WithMaxResultBytes(tc.maxResult))
			}
			srv, _, reg, _ := mountHostile(t, gateway.Upstream{MaxMessageBytes: tc.bound}, nil, opts...)
			c := mcptest.Connect(t, srv)
			pid := c.CallTool("pid", nil).Text()
			for _, idLast := range []bool{false, true} {
				raw, rpcErr := c.Call("tools/call", map[string]any{"name": "huge", "arguments": map[string]any{"mib": 16, "idLast": idLast}})
				if tc.want != "" {
					if rpcErr == nil {
						var res struct{ IsError bool }
						require.NoError(t, json.Unmarshal(raw, &res))
						require.True(t, res.IsError, "idLast %v: the call fails: %.300s", idLast, raw)
						assert.Contains(t, string(raw), tc.want)
						continue
					}
					assert.Contains(t, rpcErr.Message, tc.want, "idLast %v", idLast)
					continue
				}
				require.Nil(t, rpcErr, "idLast %v", idLast)
				var res struct {
					Content []struct{ Text string } `json:"content"`
				}
				require.NoError(t, json.Unmarshal(raw, &res))
				require.Len(t, res.Content, 1)
				assert.Len(t, res.Content[0].Text, 16<<20, "idLast %v: the whole result", idLast)
			}
			assert.Equal(t, pid, c.CallTool("pid", nil).Text(), "the same process serves on")
			got := gathered(t, reg)
			oversize := 0.0
			if tc.bound == 0 {
				oversize = 2
			}
			want := map[string]float64{
				"mcp_gateway_upstream_dropped_total{reason=oversize_message,upstream=bad}": oversize,
				"mcp_gateway_upstream_dropped_total{reason=oversize_frame,upstream=bad}":   0,
				"mcp_gateway_upstream_starts_total{result=ok,upstream=bad}":                2, // the listing session and c's, never again
			}
			assert.Equal(t, want, pick(got, want))
		})
	}
}

// peakHeap samples the heap in use every millisecond until stop is
// closed and returns the highest, less what it was at the start. Each
// sample stops the world: sampling without a pause slowed the gateway
// under test past its start timeout.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				runtime.ReadMemStats(&ms)
				out <- max(peak, ms.HeapInuse) - base
				return
			case <-tick.C:
			}
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}()
	return out
}

// TestCatalogBound (issue 67): an upstream whose catalog is 64 tools of
// 3.5 MB descriptions (224 MB, one a page, each under the bound on a
// message) is not held: its listing stops at the 16 MiB bound on a
// catalog, the upstream is failing with a log naming the bound, and the
// gateway's heap grows by far less than the catalog. A catalog of 12 MB,
// under the bound, is served, four tools/list at once included.
func TestCatalogBound(t *testing.T) {
	t.Run("over", func(t *testing.T) {
		testkit.Watchdog(t)
		stop := make(chan struct{})
		peak := peakHeap(stop)
		_, g, _, logs := mountHostile(t, gateway.Upstream{}, []string{hostiletest.CatalogEnv + "=64:3500000"})
		close(stop)
		grew := <-peak
		t.Logf("listing a 224 MB catalog grew the heap by %.1f MiB at most", float64(grew)/(1<<20))
		assert.Equal(t, gateway.StateFailing, g.Upstreams()[0].State)
		assert.Contains(t, logs.String(), "hold more than 16777216 bytes, the gateway's bound on an upstream's catalog (Upstream.MaxCatalogBytes; vigil -upstream-max-catalog)")
		assert.Less(t, grew, uint64(96<<20), "the catalog is never held whole")
	})
	t.Run("under", func(t *testing.T) {
		testkit.WatchdogAfter(t, 5*time.Minute) // 48 MB of JSON through -race on a loaded machine
		srv, g, _, _ := mountHostile(t, gateway.Upstream{}, []string{hostiletest.CatalogEnv + "=4:3000000"})
		require.Equal(t, gateway.StateReady, g.Upstreams()[0].State)
		clients := make([]*mcptest.Client, 4)
		for i := range clients {
			clients[i] = mcptest.Connect(t, srv)
		}
		stop := make(chan struct{})
		peak := peakHeap(stop)
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() {
				raw, rpcErr := c.Call("tools/list", nil)
				assert.Nil(t, rpcErr)
				assert.Greater(t, len(raw), 12_000_000, "the four big tools")
			})
		}
		wg.Wait()
		close(stop)
		grew := <-peak
		t.Logf("four tools/list of a 12 MB catalog at once grew the heap by %.1f MiB at most (their clients' copies included)", float64(grew)/(1<<20))
		assert.Less(t, grew, uint64(256<<20))
	})
}
