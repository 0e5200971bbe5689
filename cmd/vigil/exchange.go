package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
)

// checkExchange refuses the token exchange settings unless they come
// whole (-auth-exchange-endpoint, -auth-exchange-client-id and
// VIGIL_AUTH_EXCHANGE_CLIENT_SECRET) and with -auth-issuer: the tokens
// exchanged are those the resource server verified.
func checkExchange(cfg config) error {
	set := 0
	for _, v := range []string{cfg.exchangeEndpoint, cfg.exchangeClientID, cfg.exchangeSecret} {
		if v != "" {
			set++
		}
	}
	switch {
	case set == 0:
		return nil
	case set < 3:
		return fmt.Errorf("-auth-exchange-endpoint, -auth-exchange-client-id and %sAUTH_EXCHANGE_CLIENT_SECRET must be set together", envPrefix)
	case !cfg.authEnabled():
		return errors.New("-auth-exchange-endpoint needs -auth-issuer: the tokens exchanged are the ones it verifies")
	}
	return nil
}

// exchangeTool is the demo tool that exchanges tokens, registered by
// addExchange once the resource server exists.
const exchangeTool = "downstream_whoami"

// demoToolScopes returns -auth-tool-scopes without the entry of
// exchangeTool when token exchange is configured: addExchange applies it.
func demoToolScopes(cfg config) map[string][]string {
	if cfg.exchangeEndpoint == "" || cfg.authToolScopes[exchangeTool] == nil {
		return cfg.authToolScopes
	}
	m := maps.Clone(cfg.authToolScopes)
	delete(m, exchangeTool)
	return m
}

// addExchange gives rs the Exchanger of cfg's -auth-exchange-* settings,
// registers downstream_whoami, the demo tool that uses it, with srv, and
// returns it (for the token_exchange upstreams too).
func addExchange(rs *oauth.ResourceServer, cfg config, client *http.Client, srv *server.Server) (*oauth.Exchanger, error) {
	x, err := rs.Exchanger(oauth.ExchangeConfig{
		Endpoint:     cfg.exchangeEndpoint,
		ClientID:     cfg.exchangeClientID,
		ClientSecret: cfg.exchangeSecret,
		HTTPClient:   client,
	})
	if err != nil {
		return nil, fmt.Errorf("-auth-exchange-endpoint %s: %w", cfg.exchangeEndpoint, err)
	}
	return x, srv.AddTool(server.Tool{
		Name:   exchangeTool,
		Scopes: cfg.authToolScopes[exchangeTool],
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

// downstreamIdentity is what downstream_whoami returns: the claims of the
// exchanged token that say whom it names, or that it is opaque.
type downstreamIdentity struct {
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
	id := claimsOf(tok)
	text, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	r := server.Text(string(text))
	r.StructuredContent = id
	return r, nil
}

// claimsOf reads whom tok names from its payload when it is a JWT,
// without verifying it: for display only.
func claimsOf(tok string) downstreamIdentity {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return downstreamIdentity{Opaque: true}
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
		return downstreamIdentity{Opaque: true}
	}
	id := downstreamIdentity{Subject: c.Sub, Audience: c.Aud, Scope: c.Scope, Expiry: int64(c.Exp)}
	for act := c.Act; act != nil && len(id.Actors) < 8; {
		sub, _ := act["sub"].(string)
		id.Actors = append(id.Actors, sub)
		act, _ = act["act"].(map[string]any)
	}
	return id
}
