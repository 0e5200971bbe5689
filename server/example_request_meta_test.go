package server_test

import (
	"encoding/json"
	"fmt"

	"github.com/vigil-mcp/vigil/server"
)

// Middleware reads a request's _meta in place: Get a member by name, or
// range over All of them. json.Unmarshal builds one for a Request made by
// hand, as here.
func ExampleRequestMeta() {
	var meta server.RequestMeta
	if err := json.Unmarshal([]byte(
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","example.com/tenant":"blue","example.com/tenant":"green"}`), &meta); err != nil {
		fmt.Println(err)
		return
	}
	req := &server.Request{Method: "tools/call", Meta: meta}

	if raw, ok := req.Meta.Get("example.com/tenant"); ok {
		var tenant string
		_ = json.Unmarshal(raw, &tenant)
		fmt.Println("tenant:", tenant) // the last value of a repeated name
	}
	_, ok := req.Meta.Get("progressToken")
	fmt.Println("progress token:", ok)
	for name, raw := range req.Meta.All() {
		fmt.Println(name, string(raw))
	}
	// Output:
	// tenant: green
	// progress token: false
	// io.modelcontextprotocol/protocolVersion "2026-07-28"
	// example.com/tenant "green"
}
