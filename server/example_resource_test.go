package server_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// exampleSession serves one session of srv over an in-memory transport,
// initializes it, sends each request frame and prints the response.
func exampleSession(srv *server.Server, requests ...string) {
	client, conn := memory.NewPair()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), conn) }()
	ctx := context.Background()
	_ = client.WriteFrame(ctx, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}`))
	_, _ = client.Read(ctx)
	_ = client.WriteFrame(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	for _, frame := range requests {
		_ = client.WriteFrame(ctx, []byte(frame))
		m, _ := client.Read(ctx)
		out, _ := transport.AppendMessage(nil, m)
		fmt.Println(string(out))
	}
	_ = client.Close()
	if err := <-done; err != nil {
		fmt.Println("Serve:", err)
	}
}

// A resource template serves every URI that matches it; the handler gets
// the template's variables. A completer suggests values for a variable.
func ExampleServer_AddResourceTemplate() {
	srv := server.New()
	cities := []string{"Paris", "Porto", "Prague", "Rome"}
	err := srv.AddResourceTemplate(server.ResourceTemplate{
		URITemplate: "weather://{city}/today",
		Name:        "forecast",
		MIMEType:    "text/plain",
		Complete: map[string]server.CompleteFunc{
			"city": func(_ context.Context, req *server.CompleteRequest) ([]string, error) {
				var out []string
				for _, c := range cities {
					if strings.HasPrefix(c, req.Value) {
						out = append(out, c)
					}
				}
				return out, nil
			},
		},
	}, func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		city := req.Variables["city"]
		if city == "Atlantis" {
			return nil, server.ErrResourceNotFound
		}
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{
			{MIMEType: "text/plain", Text: "Sunny in " + city},
		}}, nil
	})
	if err != nil {
		panic(err)
	}
	exampleSession(srv,
		`{"jsonrpc":"2.0","id":1,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"weather://Paris/today"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"weather://Atlantis/today"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"weather://{city}/today"},"argument":{"name":"city","value":"P"}}}`,
	)
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"resourceTemplates":[{"uriTemplate":"weather://{city}/today","name":"forecast","mimeType":"text/plain"}]}}
	// {"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"weather://Paris/today","mimeType":"text/plain","text":"Sunny in Paris"}]}}
	// {"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"weather://Atlantis/today"}}}
	// {"jsonrpc":"2.0","id":4,"result":{"completion":{"values":["Paris","Porto","Prague"],"total":3,"hasMore":false}}}
}
