package mcpconv

import "context"

type transportKey struct{}

// ContextWithTransport returns a copy of ctx that names the transport a
// session is served on (a Transport constant), for the transport label of
// the session and write metrics and the live page: the context given to
// server.Server.Serve, from which the session's, and every context the
// server's Observer is given, derive. middleware's
// Instrumentation.ConnServer sets it.
func ContextWithTransport(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, transportKey{}, name)
}

// TransportFromContext returns the transport name set by
// [ContextWithTransport], or "" when there is none.
func TransportFromContext(ctx context.Context) string {
	name, _ := ctx.Value(transportKey{}).(string)
	return name
}
