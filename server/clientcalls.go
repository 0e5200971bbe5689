package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// The client features a handler can call: roots, elicitation and sampling.
// Each function works from a handler's context and goes through
// [CallClient], so the same code serves a 2025 session (a server-to-client
// request) and a 2026-07-28 stateless request (an input-required round).

// ErrInvalidResult is wrapped by the errors of [ListRoots], [Elicit] and
// [CreateMessage] when the client's answer does not have the shape MCP
// requires or, for an elicitation, does not match the requested schema.
var ErrInvalidResult = errors.New("mcp: invalid result from the client")

// errNoRequest is returned by the functions that act for a handler's
// request ([ListRoots], [Elicit], [CreateMessage],
// [NotifyElicitationComplete]) when their context carries no request: a
// mistake of the caller's, which no caller branches on.
var errNoRequest = errors.New("mcp: the context is not a handler's: it carries no request")

// Root is a root the client exposes (roots/list).
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// ListRoots asks the client for its roots (roots/list) on behalf of the
// handler whose context ctx is. It needs the client's roots capability;
// see [CallClient] for the errors.
func ListRoots(ctx context.Context) ([]Root, error) {
	if _, err := requestOf(ctx, "ListRoots"); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	// params {} rather than none: the schema makes them optional, but
	// clients decode the request's params whatever its method (go-sdk
	// fails on an input request without them), as every other request
	// here sends some.
	if err := CallClient(ctx, "roots/list", struct{}{}, &raw); err != nil {
		return nil, err
	}
	var res struct {
		Roots []Root `json:"roots"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Roots == nil {
		return nil, fmt.Errorf("%w: roots/list: want {\"roots\": [...]}", ErrInvalidResult)
	}
	return res.Roots, nil
}

// capabilityError refuses a call that needs a client capability the client
// did not declare; need is that capability as ClientCapabilities JSON, for
// the error data of a stateless request.
func capabilityError(req *Request, what string, need map[string]any) error {
	return req.era.capabilityError(fmt.Errorf("%w: %s", ErrCapability, what), need)
}

// requestOf returns the request of a handler's context.
func requestOf(ctx context.Context, what string) (*Request, error) {
	req := RequestFromContext(ctx)
	if req == nil || req.Session == nil {
		return nil, fmt.Errorf("%w: %s needs a handler's context", errNoRequest, what)
	}
	return req, nil
}
