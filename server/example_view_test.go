package server_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// A view is an HTML page served as a ui:// resource; a tool names it in
// Tool.UI. A client that declares the MCP Apps extension (here in
// initialize) sees _meta.ui on the tool and renders the view; the tool's
// result stays meaningful as text for clients that do not.
func ExampleServer_AddView() {
	srv := server.New()
	page := []byte(`<!doctype html><output id="t"></output>`) // or a //go:embed file
	err := srv.AddView(server.View{
		URI: "ui://clock/face", Name: "clock_face", HTML: page,
		UI: server.ViewUI{CSP: &server.ViewCSP{ConnectDomains: []string{"https://time.example.com"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = srv.AddTool(server.Tool{Name: "clock", UI: &server.ToolUI{ResourceURI: "ui://clock/face"}},
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("12:00"), nil
		})
	if err != nil {
		fmt.Println(err)
		return
	}

	client, conn := memory.NewPair()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), conn) }()
	ctx := context.Background()
	send := func(frame string) { _ = client.WriteFrame(ctx, []byte(frame)) }
	answer := func() {
		m, _ := client.Read(ctx)
		out, _ := transport.AppendMessage(nil, m)
		fmt.Println(string(out))
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"host","version":"1"},` +
		`"capabilities":{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}}}`)
	answer()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	answer()
	send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"ui://clock/face"}}`)
	answer()
	_ = client.Close()
	if err := <-done; err != nil {
		fmt.Println("Serve:", err)
	}
	// Output:
	// {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"logging":{},"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}},"serverInfo":{"name":"vigil","version":"dev"}}}
	// {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"clock","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"ui://clock/face"},"ui/resourceUri":"ui://clock/face"}}]}}
	// {"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"ui://clock/face","mimeType":"text/html;profile=mcp-app","text":"\u003c!doctype html\u003e\u003coutput id=\"t\"\u003e\u003c/output\u003e","_meta":{"ui":{"csp":{"connectDomains":["https://time.example.com"]}}}}]}}
}

// A tool's handler may shape its text by what the client declared: in a
// handler, req.Request.ClientCapabilities is that of the session (2025) or
// of the request itself (2026-07-28).
func ExampleClientCapabilities_SupportsUI() {
	for _, declared := range []string{
		`{}`,
		`{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`,
		`{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/uri-list"]}}}`,
	} {
		var caps server.ClientCapabilities
		if err := json.Unmarshal([]byte(declared), &caps); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(caps.SupportsUI())
	}
	// Output:
	// false
	// true
	// false
}
