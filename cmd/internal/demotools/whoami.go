package demotools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
)

// Whoami is the name of the demo tool that exchanges tokens.
const Whoami = "downstream_whoami"

// AddWhoami registers downstream_whoami with srv, needing scopes: it
// exchanges the caller's token with x and says whom the token got names.
func AddWhoami(srv *server.Server, x *oauth.Exchanger, scopes []string) error {
	return srv.AddTool(server.Tool{
		Name:   Whoami,
		Scopes: scopes,
		Description: "Exchanges the caller's token (RFC 8693) for one of the given audience, as a tool calling another service " +
			"on the caller's behalf would, and returns whom that token names: its subject, actors (act chain), audience, scope and expiry, " +
			"read from its claims unverified (the audience verifies it). Never the token itself.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"audience":{"type":"string","minLength":1,"maxLength":2048,"description":"the service the token is for"},` +
			`"scopes":{"type":"array","items":{"type":"string"},"maxItems":64,"description":"the scopes asked for (none: the authorization server's default)"}},` +
			`"required":["audience"],"additionalProperties":false}`),
	}, func(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		return downstreamWhoami(ctx, x, req)
	})
}

// Identity is what downstream_whoami returns: the claims of the
// exchanged token that say whom it names, or that it is opaque.
type Identity struct {
	Subject  string   `json:"subject,omitempty"`
	Actors   []string `json:"actors,omitempty"` // the act chain, outermost first
	Audience any      `json:"audience,omitempty"`
	Scope    string   `json:"scope,omitempty"`
	Expiry   int64    `json:"exp,omitempty"`
	Opaque   bool     `json:"opaque,omitempty"` // not a JWT: only the audience can read it
}

// downstreamWhoami is the handler of downstream_whoami.
func downstreamWhoami(ctx context.Context, x *oauth.Exchanger, req *server.CallToolRequest) (*server.CallToolResult, error) {
	var in struct {
		Audience string   `json:"audience"`
		Scopes   []string `json:"scopes"`
	}
	if err := json.Unmarshal(req.Arguments, &in); err != nil {
		return nil, err
	}
	tok, err := x.Exchange(ctx, in.Audience, in.Scopes...)
	if err != nil {
		r := server.Text(err.Error())
		r.IsError = true
		return r, nil
	}
	id := ClaimsOf(tok)
	text, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	r := server.Text(string(text))
	r.StructuredContent = id
	return r, nil
}

// ClaimsOf reads whom tok names from its payload when it is a JWT,
// without verifying it: for display only.
func ClaimsOf(tok string) Identity {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return Identity{Opaque: true}
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Sub   string         `json:"sub"`
		Aud   any            `json:"aud"`
		Scope string         `json:"scope"`
		Exp   float64        `json:"exp"`
		Act   map[string]any `json:"act"`
	}
	if err != nil || json.Unmarshal(payload, &c) != nil {
		return Identity{Opaque: true}
	}
	id := Identity{Subject: c.Sub, Audience: c.Aud, Scope: c.Scope, Expiry: int64(c.Exp)}
	for act := c.Act; act != nil && len(id.Actors) < 8; {
		sub, _ := act["sub"].(string)
		id.Actors = append(id.Actors, sub)
		act, _ = act["act"].(map[string]any)
	}
	return id
}
