package server_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// With WithOutcomeBatches, the observers hear of the requests' outcomes
// in batches: here, after four requests, or when the server shuts down.
func ExampleWithOutcomeBatches() {
	var pings atomic.Int64 // the pings that ended
	countPings := server.Observer{RequestEnded: func(_ context.Context, req *server.Request, out server.Outcome) {
		if req.Method == "ping" && out.Err == nil {
			pings.Add(1)
		}
	}}
	srv := server.New(server.WithObserver(countPings), server.WithOutcomeBatches(4, time.Hour))
	c := mcptest.Connect(nil, srv)
	defer func() { _ = c.Close() }() // in a test: mcptest.Connect(t, srv) closes it at the end
	for range 2 {
		if _, rpcErr := c.Call("ping", nil); rpcErr != nil {
			fmt.Println(rpcErr.Message)
		}
	}
	_ = c.Close()
	if err := c.Wait(); err != nil { // Serve returns once both requests were sealed
		fmt.Println(err)
	}

	fmt.Println("recorded before the shutdown:", pings.Load())
	_ = srv.Shutdown(context.Background())
	fmt.Println("recorded after it:", pings.Load())
	// Output:
	// recorded before the shutdown: 0
	// recorded after it: 2
}
