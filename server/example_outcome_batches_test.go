package server_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/memory"
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
	client, conn := memory.NewPair()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), conn) }()

	ctx := context.Background()
	_ = client.WriteFrame(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	_, _ = client.Read(ctx)
	_ = client.WriteFrame(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	_, _ = client.Read(ctx)
	_ = client.Close()
	if err := <-done; err != nil { // Serve returns once both requests were sealed
		fmt.Println(err)
	}

	fmt.Println("recorded before the shutdown:", pings.Load())
	_ = srv.Shutdown(ctx)
	fmt.Println("recorded after it:", pings.Load())
	// Output:
	// recorded before the shutdown: 0
	// recorded after it: 2
}
