package server_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// pingCounter is an Observer that counts the requests that ended.
type pingCounter struct {
	server.NopObserver
	ended atomic.Int64
}

func (c *pingCounter) RequestEnded(_ context.Context, req *server.Request, out server.Outcome) {
	if req.Method == "ping" && out.Err == nil {
		c.ended.Add(1)
	}
}

// With WithOutcomeBatches, the observers hear of the requests' outcomes
// in batches: here, after four requests, or when the server shuts down.
func ExampleWithOutcomeBatches() {
	var pings pingCounter
	srv := server.New(server.WithObserver(&pings), server.WithOutcomeBatches(4, time.Hour))
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

	fmt.Println("recorded before the shutdown:", pings.ended.Load())
	_ = srv.Shutdown(ctx)
	fmt.Println("recorded after it:", pings.ended.Load())
	// Output:
	// recorded before the shutdown: 0
	// recorded after it: 2
}
