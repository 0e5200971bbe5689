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

// failures counts the failed calls of each tool, as a server.Observer's
// RequestEnded.
type failures struct {
	mu     sync.Mutex
	failed map[string]int
}

func (f *failures) RequestEnded(_ context.Context, req *server.Request, out server.Outcome) {
	if req.Method == "tools/call" && out.Err != nil {
		f.mu.Lock()
		f.failed[req.Name]++
		f.mu.Unlock()
	}
}

// An application's own observer counts each tool call's outcome for a
// status page of its own, beside the instrumentation's: server.WithObserver
// adds it. It hears of every request's outcome, the calls the chain
// answers itself (here a recovered panic) included.
func ExampleInstrumentation_ServerOptions() {
	inst, err := middleware.NewInstrumentation()
	if err != nil {
		fmt.Println(err)
		return
	}
	obs := &failures{failed: map[string]int{}}
	srv := server.New(append(inst.ServerOptions(), server.WithObserver(server.Observer{RequestEnded: obs.RequestEnded}))...)
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

	obs.mu.Lock()
	defer obs.mu.Unlock()
	fmt.Println("crash failed", obs.failed["crash"], "times")
	// Output:
	// crash failed 2 times
}
