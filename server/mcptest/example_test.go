package mcptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// A test of your own tool: build the server as in production, connect a
// client over an in-memory pipe, call the tool and check its answer. In a
// test file the body below is that of func TestGreet(t *testing.T), with t
// for nil; an Example has no *testing.T, so it passes nil and closes the
// client itself.
func Example() {
	type in struct {
		Name string `json:"name"`
	}
	srv := server.New()
	_ = srv.AddTool(server.Tool{Name: "greet", Description: "Greets someone."},
		func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
			var args in
			if err := json.Unmarshal(req.Arguments, &args); err != nil || args.Name == "" {
				return nil, errors.New("whom should I greet?")
			}
			return server.Text("hello, " + args.Name), nil
		})

	c := mcptest.Connect(nil, srv)   // in a test: mcptest.Connect(t, srv)
	defer func() { _ = c.Close() }() // in a test: done when the test ends
	fmt.Println(c.ListTools()[0].Description)
	res := c.CallTool("greet", map[string]any{"name": "ada"})
	fmt.Println(res.Text(), res.IsError)
	res = c.CallTool("greet", nil)
	fmt.Println(res.Text(), res.IsError)
	// Output:
	// Greets someone.
	// hello, ada false
	// whom should I greet? true
}
