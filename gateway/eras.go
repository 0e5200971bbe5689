package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Eras across the hop. Upstream sessions speak the 2025 session era; a
// 2026-07-28 downstream request is stateless and cannot be sent requests.
// During its tools/call, prompts/get or resources/read, an upstream's
// sampling, elicitation or roots request becomes an input_required round
// trip (rounds.go). During any other request (completion/complete, say)
// it cannot: the request is refused upstream, and the downstream call
// fails with an error that says why, whatever the upstream made of the
// refusal.

// untranslated is what a 2026-07-28 caller's forwarded call records when
// the upstream asked something the caller could not be asked: the error
// the call ends with.
type untranslated struct {
	upstream string // the upstream's name
	err      atomic.Pointer[server.Error]
}

type untranslatedKey struct{}

// capabilityOf names the client capability each upstream request needs.
var capabilityOf = map[string]string{"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}

// watchUntranslated returns ctx with an untranslated record when its
// caller is a stateless 2026-07-28 request, for refuseStateless to fill;
// ctx and nil otherwise (no cost for a 2025 session's call).
func watchUntranslated(ctx context.Context, upstreamName string) (context.Context, *untranslated) {
	req := server.RequestFromContext(ctx)
	if req == nil || req.InSession() || server.TaskIDFromContext(ctx) != "" {
		return ctx, nil // in a session, or in a task, where asking the client waits for its answer
	}
	u := &untranslated{upstream: upstreamName}
	return context.WithValue(ctx, untranslatedKey{}, u), u
}

// refuseStateless refuses an upstream's request (method) that belongs to a
// call of a stateless caller, recording the error the call is to end
// with: the caller's missing capability (-32021) when it did not declare
// the one method needs, else that the gateway cannot ask it yet. It
// returns nil for a caller in a session.
func refuseStateless(ctx context.Context, method string) *transport.Error {
	u, ok := ctx.Value(untranslatedKey{}).(*untranslated)
	if !ok {
		return nil
	}
	if capabilityOf[method] == "" {
		return nil
	}
	var declared bool
	if req := server.RequestFromContext(ctx); req != nil {
		caps := req.ClientCapabilities
		switch method {
		case "sampling/createMessage":
			declared = caps.Sampling != nil
		case "elicitation/create":
			declared = caps.Elicitation != nil
		case "roots/list":
			declared = caps.Roots != nil
		}
	}
	e := &server.Error{
		Code:    protocol.CodeMissingRequiredClientCapability,
		Message: fmt.Sprintf("upstream %s asked the client %s, a capability it did not declare", u.upstream, method),
		Data:    json.RawMessage(`{"requiredCapabilities":{"` + capabilityOf[method] + `":{}}}`),
	}
	if declared {
		e = server.NewError(protocol.CodeInvalidRequest, fmt.Errorf(
			"upstream %s asked the client %s during the call, which a stateless 2026-07-28 request cannot be asked through the gateway yet: call it in a 2025 session (initialize)",
			u.upstream, method))
	}
	u.err.CompareAndSwap(nil, e)
	return &transport.Error{Code: int64(e.Code), Message: e.Message}
}

// failure returns the error a call ends with when the upstream asked what the
// caller could not be asked; nil when it asked nothing (or u is nil).
func (u *untranslated) failure() error {
	if u == nil {
		return nil
	}
	if e := u.err.Load(); e != nil {
		return e
	}
	return nil
}
