package connect

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/vigil-mcp/vigil/gateway/accounts"
	"github.com/vigil-mcp/vigil/server"
)

// The tools the gateway serves beside its upstreams' when one of them
// is in the user mode.
const (
	ToolConnections = "gateway_connections"
	ToolDisconnect  = "gateway_disconnect"
)

// connection is what gateway_connections tells of one: never a token.
type connection struct {
	Upstream string    `json:"upstream"`
	Scopes   []string  `json:"scopes,omitempty"`
	Expiry   time.Time `json:"expiry,omitzero"`
	Obtained time.Time `json:"obtained,omitzero"`
}

// AddTools registers gateway_connections and gateway_disconnect with
// srv: the caller's own connections, seen and revoked; a caller without
// a verified principal gets an error.
func (c *Connector) AddTools(srv *server.Server) error {
	names := make([]string, 0, len(c.ups))
	for name := range c.ups {
		names = append(names, name)
	}
	slices.Sort(names)
	enum, _ := json.Marshal(names)
	if err := srv.AddTool(server.Tool{
		Name:        ToolConnections,
		Description: "Lists the upstreams you have connected your own account to through this gateway: each one's scopes and when its token expires (never a token).",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
	}, c.connections); err != nil {
		return err
	}
	return srv.AddTool(server.Tool{
		Name:        ToolDisconnect,
		Description: "Disconnects your account from an upstream: the gateway forgets your tokens and revokes them at its authorization server; your next call to it asks you to authorize again.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"upstream":{"type":"string","enum":` + string(enum) + `}},"required":["upstream"],"additionalProperties":false}`),
	}, c.disconnect)
}

func (c *Connector) connections(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	_, p := callerOf(ctx)
	if p == nil {
		return errorResult("no verified caller: the gateway keeps connections per user of its own authorization"), nil
	}
	got, err := c.vault.Connections(ctx, PrincipalKey(p))
	if err != nil {
		c.log.Warn("connect: listing connections failed", "error", err)
		return errorResult("the connections cannot be read now; try again later"), nil
	}
	out := struct {
		Connections []connection `json:"connections"`
	}{Connections: []connection{}}
	for _, g := range got {
		out.Connections = append(out.Connections, connection{Upstream: g.Upstream, Scopes: g.Scopes, Expiry: g.Expiry, Obtained: g.Obtained})
	}
	text, _ := json.Marshal(out)
	r := server.Text(string(text))
	r.StructuredContent = out
	return r, nil
}

func (c *Connector) disconnect(ctx context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
	_, p := callerOf(ctx)
	if p == nil {
		return errorResult("no verified caller: the gateway keeps connections per user of its own authorization"), nil
	}
	var in struct {
		Upstream string `json:"upstream"`
	}
	if err := json.Unmarshal(req.Arguments, &in); err != nil || c.ups[in.Upstream] == nil {
		return errorResult("upstream: name one of the upstreams that act as each user"), nil
	}
	err := c.vault.Disconnect(ctx, PrincipalKey(p), in.Upstream)
	if lives, ok := errors.AsType[*accounts.AccessTokenLivesError](err); ok {
		return server.Text("disconnected from " + in.Upstream + ": " + livesText(lives)), nil
	}
	if err != nil {
		c.log.Warn("connect: disconnect", "upstream", in.Upstream, "error", err)
		return errorResult("disconnected, but the revocation at the authorization server failed: " + in.Upstream + " may accept the tokens until they expire"), nil
	}
	return server.Text("disconnected from " + in.Upstream), nil
}

func errorResult(msg string) *server.CallToolResult {
	r := server.Text(msg)
	r.IsError = true
	return r
}

// livesText is what a disconnection that revoked the refresh token only
// tells: the last access token lives until it expires.
func livesText(e *accounts.AccessTokenLivesError) string {
	until := "until it expires"
	if !e.Expiry.IsZero() {
		until = "until " + e.Expiry.UTC().Format(time.RFC3339)
	}
	return "the refresh token is revoked; the authorization server revokes no access token of this kind (unsupported_token_type), so the last one lives " + until
}
