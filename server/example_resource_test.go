package server_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

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
	c := mcptest.Connect(nil, srv)
	defer func() { _ = c.Close() }() // in a test: mcptest.Connect(t, srv) closes it at the end
	fmt.Println(c.ReadResource("weather://Paris/today")[0].Text)
	_, rpcErr := c.Call("resources/read", map[string]any{"uri": "weather://Atlantis/today"})
	fmt.Println(rpcErr.Code, rpcErr.Message)
	res, _ := c.Call("completion/complete", map[string]any{
		"ref":      map[string]any{"type": "ref/resource", "uri": "weather://{city}/today"},
		"argument": map[string]any{"name": "city", "value": "P"},
	})
	fmt.Println(string(res))
	// Output:
	// Sunny in Paris
	// -32002 Resource not found
	// {"completion":{"values":["Paris","Porto","Prague"],"total":3,"hasMore":false}}
}
