package server_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// A typed tool is a plain Go function: the server infers the input and
// output schemas from its types, validates the arguments before calling
// it, and returns its result as structured content mirrored as JSON text.
// Invalid arguments come back as a tool error the model can read.
func ExampleAddTypedTool() {
	type shoutIn struct {
		Text  string `json:"text" jsonschema:"what to shout"`
		Times int    `json:"times,omitempty" jsonschema:"how often; once by default"`
	}
	type shoutOut struct {
		Shout  string `json:"shout"`
		Length int    `json:"length"`
	}
	srv := server.New()
	err := server.AddTypedTool(srv, server.Tool{Name: "shout", Description: "Shouts the text."},
		func(_ context.Context, _ *server.CallToolRequest, in shoutIn) (shoutOut, error) {
			s := strings.Repeat(strings.ToUpper(in.Text)+"!", max(in.Times, 1))
			return shoutOut{Shout: s, Length: len(s)}, nil
		})
	if err != nil {
		panic(err)
	}

	c := mcptest.Connect(nil, srv)   // a client over an in-memory pipe, initialized
	defer func() { _ = c.Close() }() // in a test: mcptest.Connect(t, srv) closes it at the end
	fmt.Println(string(c.ListTools()[0].InputSchema))
	res := c.CallTool("shout", map[string]any{"text": "hey", "times": 2})
	fmt.Println(res.Text(), res.IsError)
	res = c.CallTool("shout", map[string]any{"text": 7})
	fmt.Println(res.Text(), res.IsError)
	// Output:
	// {"type":"object","properties":{"text":{"type":"string","description":"what to shout"},"times":{"type":"integer","description":"how often; once by default"}},"required":["text"],"additionalProperties":false}
	// {"shout":"HEY!HEY!","length":8} false
	// invalid arguments for tool "shout": /text: type: 7 has type "number", want "string" true
}
