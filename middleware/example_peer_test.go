package middleware_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Streamable HTTP served from an http.Server whose ConnContext is
// streamable.ConnContext (as vigil.Service's is): each span then names the
// client by its connection's address, whatever X-Forwarded-For says.
func Example_peerAddress() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	inst, err := middleware.NewInstrumentation(middleware.WithTracerProvider(tp))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := server.New(inst.ServerOptions()...)
	mcp := streamable.New(srv)
	defer func() { _ = mcp.Close() }()

	ts := httptest.NewUnstartedServer(mcp)
	ts.Config.ConnContext = streamable.ConnContext // the one line that matters
	ts.Start()
	defer ts.Close()

	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-Forwarded-For", "203.0.113.9") // not believed
	resp, err := ts.Client().Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = resp.Body.Close()

	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "client.address", "network.protocol.version":
				fmt.Printf("%s %s=%s\n", s.Name(), kv.Key, kv.Value.String())
			}
		}
	}
	// Output:
	// initialize client.address=127.0.0.1
	// initialize network.protocol.version=1.1
}
