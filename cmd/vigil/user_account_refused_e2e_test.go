package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/middleware/oauth"
)

// The upstream's resource server credentials at its authorization server,
// to introspect the users' tokens.
var refusingIntrospector = oidcClient{ID: "upstream-rs", Secret: "upstream-rs-secret-5d"}

// startRefusingUserRig is startUserRig whose upstream's authorization
// server issues opaque tokens, which the upstream introspects on every
// request: a revoked token is refused at once (401), as an upstream
// that asks its authorization server does. revokeGrant makes a token's
// revocation revoke its grant, refresh token included (the user revoked
// the gateway at her provider).
func startRefusingUserRig(t *testing.T, revokeGrant bool) *userRig {
	t.Helper()
	port := authResource(t)
	base := strings.TrimSuffix(port.resource, "/mcp")
	up := startSubjectUpstream(t)
	as := startOIDCProvider(t, oidcOptions{
		Resource: up.url, Host: "127.0.0.2", Accounts: []string{"alice", "bob"},
		Opaque: true, Introspector: &refusingIntrospector, RevokeGrant: revokeGrant,
		WebClients: []oidcWebClient{{ID: userGatewayClient, Secret: userUpSecret, RedirectURI: base + "/connect/callback"}},
	})
	v, err := oauth.NewVerifier(t.Context(), oauth.VerifierConfig{
		Issuer: as.Issuer(), Audiences: []string{up.url}, AllowInsecureHTTP: true,
		ClientID: refusingIntrospector.ID, ClientSecret: refusingIntrospector.Secret, CacheTTL: -1,
	})
	require.NoError(t, err)
	up.verifier.Store(v)
	issuer := as.Issuer()
	up.issuer.Store(&issuer)
	idp := startOIDCProvider(t, oidcOptions{
		Resource: port.resource, Accounts: []string{"alice", "bob"}, OtherClients: userAccounts,
		WebClients: []oidcWebClient{{ID: userSignInClient, Secret: userSignInSecret, RedirectURI: base + "/connect/signin"}},
	})
	file := filepath.Join(t.TempDir(), "up-secret")
	require.NoError(t, os.WriteFile(file, []byte(userUpSecret+"\n"), 0o600))
	r := &userRig{spans: newTraceSink(t), idp: idp, as: as, up: up, base: base, secretFile: file}
	r.v = startVigilAuth(t, port, r.idp.Issuer(), r.env(), r.flags()...)
	return r
}

// lastToken returns the last token r's upstream received.
func (r *userRig) lastToken(t *testing.T) string {
	t.Helper()
	seen := r.up.seen()
	require.NotEmpty(t, seen)
	return seen[len(seen)-1]
}

// revokeLast revokes, at r's authorization server, the last token the
// upstream received (the gateway's client revokes it, RFC 7009): with
// it, oidc-provider revokes every token of its grant, the refresh token
// included (the user revoked the gateway at her provider).
func (r *userRig) revokeLast(t *testing.T) {
	t.Helper()
	r.as.Revoke(t, oidcClient{ID: userGatewayClient, Secret: userUpSecret}, r.lastToken(t))
}

// TestUserAccountRefusedToken (issue 88, 6b): the upstream answers
// alice's next call 401. When it refuses her token only (she changed her
// password, say) while her grant at the authorization server
// (oidc-provider) holds, that same call refreshes it once there and
// answers as alice, in both eras; when it refuses the renewed token too
// (her account there closed), the connection is forgotten and that same
// call asks her again, as does each call after, one refresh each. When
// her grant was revoked at the
// authorization server (she revoked the gateway at her provider; the
// upstream asks it about every token), the refresh is refused and that
// same call answers -32042 with a fresh link, in both eras and at an
// upstream session's start too, never a bare -32603; once she connected
// again, her calls answer as her.
func TestUserAccountRefusedToken(t *testing.T) {
	t.Run("token refused: renewed", func(t *testing.T) {
		r := startUserRig(t)
		alice := r.token(t, userAccounts[0])
		ca := r.v.session(t, alice)
		r.connect(t, asked(t, call2025(t, ca, "whoami", nil)), "alice")
		require.Equal(t, "subject=alice", resultText(t, call2025(t, ca, "whoami", nil)))
		refreshes := func() int64 {
			return scrapeSum(t, strings.TrimPrefix(r.base, "http://"), "mcp_gateway_account_refreshes_total")
		}
		require.Zero(t, refreshes())

		refused := r.lastToken(t)
		r.up.refuse(refused)
		assert.Equal(t, "subject=alice", resultText(t, call2025(t, ca, "whoami", nil)), "2025-11-25: the same call, renewed")
		assert.Equal(t, int64(1), refreshes(), "one refresh")
		assert.NotEqual(t, refused, r.lastToken(t), "the renewed token")

		r.up.refuse(r.lastToken(t))
		assert.Equal(t, "subject=alice", resultText(t, r.call2026(t, alice, "whoami", `{}`)), "2026-07-28: the same call, renewed")
		assert.Equal(t, int64(2), refreshes(), "one refresh more")
		assert.Equal(t, "subject=alice", resultText(t, call2025(t, ca, "whoami", nil)), "no refresh more")
		assert.Equal(t, int64(2), refreshes())
	})
	t.Run("renewed token refused too: asked again", func(t *testing.T) {
		r := startUserRig(t)
		alice := r.token(t, userAccounts[0])
		ca := r.v.session(t, alice)
		r.connect(t, asked(t, call2025(t, ca, "whoami", nil)), "alice")
		require.Equal(t, "subject=alice", resultText(t, call2025(t, ca, "whoami", nil)))
		refreshes := func() int64 {
			return scrapeSum(t, strings.TrimPrefix(r.base, "http://"), "mcp_gateway_account_refreshes_total")
		}

		r.up.closed.Store(true) // her account at the upstream is closed: it refuses every token of hers
		m := call2025(t, ca, "whoami", nil)
		require.NotNil(t, m.Error, "%s", m.Result)
		assert.NotContains(t, m.Error.Message, "HTTP 401")
		r.connect(t, asked(t, m), "alice") // the renewed token refused too: forgotten, asked on the same call
		assert.Equal(t, int64(1), refreshes(), "one refresh, no more")
		m = call2025(t, ca, "whoami", nil)
		require.NotNil(t, m.Error, "%s", m.Result)
		asked(t, m) // while the upstream refuses her, each call asks her, after one refresh
		assert.Equal(t, int64(2), refreshes(), "one refresh a call")
	})
	t.Run("grant revoked: asked again", func(t *testing.T) {
		r := startRefusingUserRig(t, true)
		alice := r.token(t, userAccounts[0])
		ca := r.v.session(t, alice)
		r.connect(t, asked(t, call2025(t, ca, "whoami", nil)), "alice")
		require.Equal(t, "subject=alice", resultText(t, call2025(t, ca, "whoami", nil)))

		r.revokeLast(t)
		m := call2025(t, ca, "whoami", nil)
		require.NotNil(t, m.Error, "%s", m.Result)
		assert.NotContains(t, m.Error.Message, "HTTP 401")
		e := asked(t, m)
		assert.Contains(t, e.URL, r.base+"/connect/", "2025-11-25: a fresh link on the same call")
		r.connect(t, e, "alice")
		assert.Equal(t, "subject=alice", resultText(t, call2025(t, ca, "whoami", nil)))

		r.revokeLast(t)
		m = r.call2026(t, alice, "whoami", `{}`)
		require.NotNil(t, m.Error, "%s", m.Result)
		assert.NotContains(t, m.Error.Message, "HTTP 401")
		r.connect(t, asked(t, m), "alice")
		assert.Equal(t, "subject=alice", resultText(t, r.call2026(t, alice, "whoami", `{}`)), "2026-07-28: connected again")
		assert.Equal(t, int64(2), scrapeSum(t, strings.TrimPrefix(r.base, "http://"), "mcp_gateway_account_refresh_failures_total"), "two refused refreshes")
	})
}

// TestUserAccountRefusedTokenElicitURL: in a 2025-11-25 session that
// declared the elicitation url capability, alice's grant is revoked at
// the authorization server and the upstream refuses her token: the
// refresh is refused, she is sent elicitation/create in url mode on the
// call's stream, the client accepts, she authorizes again in a browser,
// and that same call answers as alice.
func TestUserAccountRefusedTokenElicitURL(t *testing.T) {
	r := startRefusingUserRig(t, true)
	alice := r.token(t, userAccounts[0])
	r.connect(t, asked(t, r.call2026(t, alice, "whoami", `{}`)), "alice")
	c := newE2EClient(r.v.url, &http.Client{Transport: bearer{token: alice, base: r.v.hc.Transport}, Timeout: 30 * time.Second})
	c.caps = map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
	require.NoError(t, c.initialize(t.Context()))
	require.Equal(t, "subject=alice", resultText(t, call2025(t, c, "whoami", nil)))

	r.revokeLast(t)
	id, msg := c.request("tools/call", toolParams("whoami", nil, "", ""))
	resp, err := c.post(t.Context(), msg)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var links []string
	m, err := readResponse(resp, id, func(o rpcMessage) {
		if o.Method != "elicitation/create" {
			return
		}
		var p struct{ Mode, URL string }
		require.NoError(t, json.Unmarshal(o.Params, &p))
		require.Equal(t, "url", p.Mode, "%s", o.Params)
		links = append(links, p.URL)
		ack, err := c.post(t.Context(), map[string]any{"jsonrpc": "2.0", "id": o.ID, "result": map[string]any{"action": "accept"}})
		require.NoError(t, err)
		_ = ack.Body.Close()
		r.connect(t, elicitation{URL: p.URL}, "alice")
	})
	require.NoError(t, err)
	require.Len(t, links, 1, "asked once, on the call's stream")
	assert.Equal(t, "subject=alice", resultText(t, m), "the same call, once she authorized again")
}
