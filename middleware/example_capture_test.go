package middleware_test

import (
	"fmt"
	"strconv"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
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

// ExampleWithContentCapture turns on content capture with a Redactor of
// one's own: here one that records only the size of each value.
func ExampleWithContentCapture() {
	sizes := func(_ string, value []byte) string { return strconv.Itoa(len(value)) + " bytes" }
	tp := sdktrace.NewTracerProvider()
	srv := server.New(server.WithMiddleware(middleware.Tracing(
		middleware.WithTracerProvider(tp),
		middleware.WithContentCapture(sizes), // nil: DefaultRedactor(0)
	)))
	fmt.Println(srv != nil)
	// Output: true
}
