package server_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
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

	client, conn := memory.NewPair()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), conn) }()

	ctx := context.Background()
	for i, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"shout","arguments":{"text":"hey","times":2}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"shout","arguments":{"text":7}}}`,
	} {
		_ = client.WriteFrame(ctx, []byte(frame))
		m, _ := client.Read(ctx)
		if i == 0 {
			continue // the initialize result
		}
		out, _ := transport.AppendMessage(nil, m)
		fmt.Println(string(out))
	}
	_ = client.Close()
	fmt.Println("Serve returned:", <-done)
	// Output:
	// {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"shout","description":"Shouts the text.","inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"what to shout"},"times":{"type":"integer","description":"how often; once by default"}},"required":["text"],"additionalProperties":false},"outputSchema":{"type":"object","properties":{"shout":{"type":"string"},"length":{"type":"integer"}},"required":["shout","length"],"additionalProperties":false}}]}}
	// {"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\"shout\":\"HEY!HEY!\",\"length\":8}"}],"structuredContent":{"shout":"HEY!HEY!","length":8}}}
	// {"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"invalid arguments for tool \"shout\": /text: type: 7 has type \"number\", want \"string\""}],"isError":true}}
	// Serve returned: <nil>
}
