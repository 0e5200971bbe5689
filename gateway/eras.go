package gateway

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Eras across the hop. Upstream sessions speak the 2025 session era; a
// 2026-07-28 downstream request is stateless and cannot be sent requests:
// the 2026 way to ask it something is an input_required result and a
// retry, which the gateway does not yet translate an upstream's sampling,
// elicitation or roots request into (the upstream's call would have to
// wait across the client's retry). Until it does, such a request is
// refused upstream, and the downstream call fails with an error that says
// why, whatever the upstream made of the refusal.

// untranslated is what a 2026-07-28 caller's forwarded call records when
// the upstream asked something the caller could not be asked.
type untranslated struct {
	method atomic.Pointer[string]
}

type untranslatedKey struct{}

// watchUntranslated returns ctx with an untranslated record when its
// caller is a stateless 2026-07-28 request, for refuseStateless to fill;
// ctx and nil otherwise (no cost for a 2025 session's call).
func watchUntranslated(ctx context.Context) (context.Context, *untranslated) {
	req := server.RequestFromContext(ctx)
	if req == nil || req.InSession() {
		return ctx, nil
	}
	u := &untranslated{}
	return context.WithValue(ctx, untranslatedKey{}, u), u
}

// refuseStateless refuses an upstream's request (method) that belongs to a
// call of a stateless caller, recording it; nil for a caller in a session.
func refuseStateless(ctx context.Context, method string) *transport.Error {
	u, ok := ctx.Value(untranslatedKey{}).(*untranslated)
	if !ok {
		return nil
	}
	u.method.CompareAndSwap(nil, &method)
	return &transport.Error{Code: int64(protocol.CodeInvalidRequest),
		Message: "the client's request is a stateless 2026-07-28 one, which the gateway cannot ask " + method + " yet"}
}

// err returns the downstream error of a call during which the upstream
// asked what the caller could not be asked; nil when it asked nothing (or
// u is nil).
func (u *untranslated) err(upstreamName string) error {
	if u == nil {
		return nil
	}
	method := u.method.Load()
	if method == nil {
		return nil
	}
	return server.NewError(protocol.CodeInvalidRequest, fmt.Errorf(
		"upstream %s asked the client %s during the call, which a stateless 2026-07-28 request cannot be asked through the gateway yet: call it in a 2025 session (initialize)",
		upstreamName, *method))
}
