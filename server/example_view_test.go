package server_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
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

	// A host that renders views declares the extension.
	c := mcptest.Connect(nil, srv, mcptest.WithCapabilities(map[string]any{"extensions": map[string]any{
		"io.modelcontextprotocol/ui": map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}},
	}}))
	defer func() { _ = c.Close() }() // in a test: mcptest.Connect(t, srv) closes it at the end
	tools, _ := c.Call("tools/list", nil)
	fmt.Println(string(tools))
	view, _ := c.Call("resources/read", map[string]any{"uri": "ui://clock/face"})
	fmt.Println(string(view))
	// Output:
	// {"tools":[{"name":"clock","inputSchema":{"type":"object"},"_meta":{"ui":{"resourceUri":"ui://clock/face"},"ui/resourceUri":"ui://clock/face"}}]}
	// {"contents":[{"uri":"ui://clock/face","mimeType":"text/html;profile=mcp-app","text":"\u003c!doctype html\u003e\u003coutput id=\"t\"\u003e\u003c/output\u003e","_meta":{"ui":{"csp":{"connectDomains":["https://time.example.com"]}}}}]}
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
