package transport

import (
	"context"
)

type relatedKey struct{}

// ContextWithRelatedRequest returns a copy of ctx that marks the messages
// written with it as belonging to the incoming request id: the progress,
// log and server-to-client requests a handler sends. Transports that carry
// each request on its own stream (Streamable HTTP) route such messages to
// that request's stream; others ignore it.
func ContextWithRelatedRequest(ctx context.Context, id ID) context.Context {
	return context.WithValue(ctx, relatedKey{}, id)
}

// RelatedRequestFromContext returns the id set by
// [ContextWithRelatedRequest], if any.
func RelatedRequestFromContext(ctx context.Context) (ID, bool) {
	id, ok := ctx.Value(relatedKey{}).(ID)
	return id, ok
}
