package middleware

import (
	"context"
	"net/http"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/telemetry"
)

// transportOf returns the transport of a request's context: the name set
// by mcpconv.ContextWithTransport (Instrumentation.ConnServer), else Streamable HTTP for a context of an HTTP
// server's, else "".
func transportOf(ctx context.Context) string {
	if name := mcpconv.TransportFromContext(ctx); name != "" {
		return name
	}
	if ctx.Value(http.LocalAddrContextKey) != nil {
		return telemetry.TransportStreamableHTTP
	}
	return ""
}
