package gateway_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// TestHTTPUpstreamConnectionsReused: the sessions of an HTTP upstream
// share one pool of connections, kept warm for as many calls as were in
// flight at once: after a first round of 8 calls at once (each held
// upstream until all 8 arrived, so that each needed a connection), four
// more rounds open at most one each: a connection goes back to the pool
// on net/http's read loop once its body was read, which can come just
// after the answer reached its caller and the next round began. With Go's
// default of 2 idle connections per host, each round opened 6.
func TestHTTPUpstreamConnectionsReused(t *testing.T) {
	testkit.Watchdog(t)
	const clients, rounds = 8, 5
	arrived := make(chan struct{})
	release := make(chan struct{})
	up := server.New()
	require.NoError(t, up.AddTool(server.Tool{Name: "hold"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		select {
		case arrived <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return server.Text("held"), nil
	}))
	ep := streamable.New(up)
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(ep)
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		_ = ep.Close()
		_ = up.Close()
	})
	srv := frontServer(t, gateway.Upstream{Name: "h", URL: ts.URL})
	cs := make([]*mcptest.Client, clients)
	for i := range cs {
		cs[i] = mcptest.Connect(t, srv)
	}
	var afterFirst int64
	for round := range rounds {
		errs := make([]*transport.Error, clients)
		var wg sync.WaitGroup
		for i, c := range cs {
			wg.Go(func() { _, errs[i] = c.Call("tools/call", map[string]any{"name": "hold"}) })
		}
		for range clients {
			<-arrived
		}
		for range clients {
			release <- struct{}{}
		}
		wg.Wait()
		for i, err := range errs {
			require.Nil(t, err, "round %d, client %d", round, i)
		}
		if round == 0 {
			afterFirst = conns.Load()
		}
	}
	assert.LessOrEqual(t, conns.Load()-afterFirst, int64(rounds-1), "connections opened after the first round (of %d)", conns.Load())
}
