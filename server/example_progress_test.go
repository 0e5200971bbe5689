package server_test

import (
	"context"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
)

// A tool reports its progress; the client asked for it with a
// progressToken and receives notifications/progress before the result.
func ExampleReportProgress() {
	// Every update is sent here; by default those closer than 10 ms are
	// dropped, except the final one.
	srv := server.New(server.WithImplementation("example", "1.0"), server.WithProgressInterval(0))
	err := srv.AddTool(server.Tool{Name: "index", Description: "Indexes three files."},
		func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			for i, file := range []string{"a.go", "b.go", "c.go"} {
				// A no-op when the client sent no progressToken.
				if err := server.ReportProgress(ctx, float64(i+1), 3, "indexed "+file); err != nil {
					return nil, err
				}
			}
			return server.Text("3 files indexed"), nil
		})
	if err != nil {
		panic(err)
	}

	c := mcptest.Connect(nil, srv)
	defer func() { _ = c.Close() }() // in a test: mcptest.Connect(t, srv) closes it at the end
	res, _ := c.Call("tools/call", map[string]any{"name": "index", "_meta": map[string]any{"progressToken": "job-1"}})
	for range 3 { // the notifications that came before the answer, kept in order
		n := c.Recv().(*transport.Request)
		fmt.Println(n.Method, string(n.Params))
	}
	fmt.Println(string(res))
	// Output:
	// notifications/progress {"progressToken":"job-1","progress":1,"total":3,"message":"indexed a.go"}
	// notifications/progress {"progressToken":"job-1","progress":2,"total":3,"message":"indexed b.go"}
	// notifications/progress {"progressToken":"job-1","progress":3,"total":3,"message":"indexed c.go"}
	// {"content":[{"type":"text","text":"3 files indexed"}]}
}
