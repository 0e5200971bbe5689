package middleware_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// ExampleWithAuditLog writes one JSON line per tools/call: who called (the
// principal the authorization put on the request's context), which tool,
// how it ended, and the names of the arguments; their values only for the
// tools of WithAuditArgumentValues. cmd/vigil passes a writer that writes
// in the background, so that no call waits on the audit log.
func ExampleWithAuditLog() {
	var out lockedBuffer
	inst, err := middleware.NewInstrumentation(middleware.WithAuditLog(&out), middleware.WithAuditArgumentValues("greet"))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := server.New(inst.ServerOptions()...)
	text := func(s string) *server.CallToolResult {
		return &server.CallToolResult{Content: []server.Content{&server.TextContent{Text: s}}}
	}
	_ = srv.AddTool(server.Tool{Name: "greet", Description: "says hello"},
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return text("hello"), nil
		})
	_ = srv.AddTool(server.Tool{Name: "login", Description: "checks a password"},
		func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return text("welcome"), nil
		})

	// Over HTTP the resource server puts the principal on each request's
	// context; here, on the session's.
	ctx := auth.ContextWithPrincipal(context.Background(), &auth.Principal{Subject: "ada", ClientID: "example-client"})
	client, end := memory.NewPair()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, end) }()
	call := func(id int64, method, params string) {
		_ = client.Write(context.Background(), &transport.Request{ID: transport.Int64ID(id), Method: method, Params: json.RawMessage(params)})
		_, _ = client.Read(context.Background())
	}
	call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}`)
	call(2, "tools/call", `{"name":"greet","arguments":{"name":"Grace"}}`)
	call(3, "tools/call", `{"name":"login","arguments":{"user":"ada","password":"s3cret"}}`)
	_ = client.Close()
	if err := <-served; err != nil {
		fmt.Println("serve:", err)
	}

	// A record is written when its call is done, after its answer went out:
	// two calls' records may come in either order.
	type record struct { // the members this example prints
		Subject        string          `json:"subject"`
		ClientID       string          `json:"client_id"`
		RequestID      string          `json:"request_id"`
		Tool           string          `json:"tool"`
		Outcome        string          `json:"outcome"`
		Arguments      []string        `json:"arguments"`
		ArgumentValues json.RawMessage `json:"argument_values"`
	}
	var recs []record
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var rec record
		_ = json.Unmarshal(sc.Bytes(), &rec)
		recs = append(recs, rec)
	}
	slices.SortFunc(recs, func(a, b record) int { return strings.Compare(a.RequestID, b.RequestID) })
	for _, rec := range recs {
		fmt.Printf("%s (%s) %s #%s: %s, arguments %v %s\n", rec.Subject, rec.ClientID, rec.Tool, rec.RequestID, rec.Outcome, rec.Arguments, rec.ArgumentValues)
	}
	// Output:
	// ada (example-client) greet #2: ok, arguments [name] {"name":"Grace"}
	// ada (example-client) login #3: ok, arguments [password user]
}
