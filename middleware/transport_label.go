package middleware

import (
	"context"
	"net/http"

	"github.com/vigil-mcp/vigil/telemetry"
)

type transportKey struct{}

// ContextWithTransport returns a copy of ctx that names the transport a
// session is served on, for the transport label of the session and write
// metrics (those of the metrics observer). Pass it to server.Server.Serve: the session's
// context, and every context the server's Observer is given, derive from it. Use the
// telemetry.Transport constants; [Instrumentation.ConnServer] sets it for you.
func ContextWithTransport(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, transportKey{}, name)
}

// TransportFromContext returns the transport name set by
// [ContextWithTransport], or "" (labeled "other") when there is none.
func TransportFromContext(ctx context.Context) string {
	name, _ := ctx.Value(transportKey{}).(string)
	return name
}

// transportOf returns the transport of a request's context: the name set
// by [ContextWithTransport], else Streamable HTTP for a context of an HTTP
// server's, else "".
func transportOf(ctx context.Context) string {
	if name := TransportFromContext(ctx); name != "" {
		return name
	}
	if ctx.Value(http.LocalAddrContextKey) != nil {
		return telemetry.TransportStreamableHTTP
	}
	return ""
}
