package server_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// With WithOutcomeBatches, what middleware records through AfterDone runs
// in batches: here, after four requests, or when FlushOutcomes asks.
func ExampleWithOutcomeBatches() {
	var recorded atomic.Int64
	count := func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			req.AfterDone(func(server.Outcome) { recorded.Add(1) })
			return next(ctx, req)
		}
	}
	srv := server.New(server.WithMiddleware(count), server.WithOutcomeBatches(4, time.Hour))
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

	fmt.Println("recorded before the flush:", recorded.Load())
	srv.FlushOutcomes()
	fmt.Println("recorded after it:", recorded.Load())
	// Output:
	// recorded before the flush: 0
	// recorded after it: 2
}
