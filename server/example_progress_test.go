package server_test

import (
	"context"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
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

	client, conn := memory.NewPair()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), conn) }()
	ctx := context.Background()
	send := func(frame string) { _ = client.WriteFrame(ctx, []byte(frame)) }
	show := func() transport.Message {
		m, _ := client.Read(ctx)
		out, _ := transport.AppendMessage(nil, m)
		fmt.Println(string(out))
		return m
	}

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}`)
	_, _ = client.Read(ctx)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"index","_meta":{"progressToken":"job-1"}}}`)
	for {
		if _, ok := show().(*transport.Response); ok {
			break
		}
	}
	_ = client.Close()
	fmt.Println("Serve returned:", <-done)
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"job-1","progress":1,"total":3,"message":"indexed a.go"}}
	// {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"job-1","progress":2,"total":3,"message":"indexed b.go"}}
	// {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"job-1","progress":3,"total":3,"message":"indexed c.go"}}
	// {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"3 files indexed"}]}}
	// Serve returned: <nil>
}
