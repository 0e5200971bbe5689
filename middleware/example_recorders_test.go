package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// A request recorder counts each tool call's outcome for a status page of
// the application's own: it is called with every request's outcome, the
// calls the chain answers itself (here a recovered panic) included.
func ExampleWithRequestRecorders() {
	var mu sync.Mutex
	failed := map[string]int{}
	inst, err := middleware.NewInstrumentation(middleware.WithRequestRecorders(
		func(req *server.Request, out server.Outcome) {
			if req.Method == "tools/call" && out.Err != nil {
				mu.Lock()
				failed[req.Name]++
				mu.Unlock()
			}
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := server.New(inst.ServerOptions()...)
	_ = srv.AddTool(server.Tool{Name: "crash"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		panic("oops")
	})

	client, end := memory.NewPair()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), end) }()
	for id, req := range []struct{ method, params string }{
		{"initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}`},
		{"tools/call", `{"name":"crash"}`},
		{"tools/call", `{"name":"crash"}`},
	} {
		_ = client.Write(context.Background(), &transport.Request{ID: transport.Int64ID(int64(id + 1)), Method: req.method, Params: json.RawMessage(req.params)})
		_, _ = client.Read(context.Background())
	}
	_ = client.Close()
	if err := <-served; err != nil { // every request's outcome is recorded by now
		fmt.Println(err)
	}

	mu.Lock()
	defer mu.Unlock()
	fmt.Println("crash failed", failed["crash"], "times")
	// Output:
	// crash failed 2 times
}
