package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// ExampleDefaultRedactor shows what a span records of a tool's arguments
// with content capture on: secrets masked by key and by look, the rest as
// sent, compact and capped.
func ExampleDefaultRedactor() {
	redact := middleware.DefaultRedactor(0) // 4096 bytes at most
	fmt.Println(redact("", []byte(`{"city": "Paris", "api_key": "k-123", "auth": "Bearer eyJhbGciOi"}`)))
	fmt.Println(redact("password", []byte(`"hunter2"`))) // a prompt variable named password
	// Output:
	// {"api_key":"[REDACTED]","auth":"[REDACTED]","city":"Paris"}
	// [REDACTED]
}

// ExampleWithContentCapture turns content capture on for one tool call,
// once with the default redactor and once with a Redactor of one's own
// that records only sizes.
func ExampleWithContentCapture() {
	sizes := func(_ string, value []byte) string { return strconv.Itoa(len(value)) + " bytes" }
	for _, r := range []middleware.Redactor{nil, sizes} { // nil: DefaultRedactor(0)
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		inst, err := middleware.NewInstrumentation(middleware.WithTracerProvider(tp), middleware.WithContentCapture(r))
		if err != nil {
			fmt.Println(err)
			return
		}
		srv := server.New(inst.ServerOptions()...)
		_ = srv.AddTool(server.Tool{Name: "login"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("welcome"), nil
		})
		client, end := memory.NewPair()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), end) }()
		for i, m := range []struct{ method, params string }{
			{"initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"example","version":"1"}}`},
			{"tools/call", `{"name":"login","arguments":{"user":"ann","password":"hunter2"}}`},
		} {
			_ = client.Write(context.Background(), &transport.Request{ID: transport.Int64ID(int64(i + 1)), Method: m.method, Params: json.RawMessage(m.params)})
			_, _ = client.Read(context.Background())
		}
		_ = client.Close()
		if err := <-served; err != nil { // every span has ended once Serve returns
			fmt.Println(err)
		}
		for _, s := range rec.Ended() {
			for _, kv := range s.Attributes() {
				if strings.HasPrefix(string(kv.Key), "gen_ai.tool.call.") {
					fmt.Printf("%s=%s\n", kv.Key, kv.Value.AsString())
				}
			}
		}
	}
	// Output:
	// gen_ai.tool.call.arguments={"password":"[REDACTED]","user":"ann"}
	// gen_ai.tool.call.result={"content":[{"text":"welcome","type":"text"}]}
	// gen_ai.tool.call.arguments=35 bytes
	// gen_ai.tool.call.result=46 bytes
}
