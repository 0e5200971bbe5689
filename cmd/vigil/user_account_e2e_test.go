package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/middleware/oauth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// subjectUpstream is an HTTP MCP server protected by OAuth: every request
// needs a token of its own authorization server for its own URL (else 401
// with resource_metadata, RFC 9728); its tool whoami answers the subject
// the call came with, as does its REST operation GET /rest/whoami.
type subjectUpstream struct {
	url      string
	issuer   atomic.Pointer[string]
	verifier atomic.Pointer[oauth.TokenVerifier]
	mu       sync.Mutex
	tokens   []string                   // every bearer token received
	sessions map[string]map[string]bool // the subjects seen on each of its sessions
	refused  map[string]bool            // tokens it answers 401, valid or not (refuse)
	closed   atomic.Bool                // every token is answered 401 (refuseAll)
}

func startSubjectUpstream(t *testing.T) *subjectUpstream {
	t.Helper()
	u := &subjectUpstream{sessions: map[string]map[string]bool{}}
	srv := server.New()
	require.NoError(t, srv.AddTool(server.Tool{Name: "whoami"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		p, ok := auth.PrincipalFromContext(server.RequestFromContext(ctx).ArrivalContext())
		if !ok {
			return nil, fmt.Errorf("no principal")
		}
		return server.Text("subject=" + p.Subject), nil
	}))
	h := streamable.New(srv)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource" {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": u.url, "authorization_servers": []string{*u.issuer.Load()}})
			return
		}
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var p *auth.Principal
		err := errors.New("no token")
		if tok != "" {
			u.mu.Lock()
			u.tokens = append(u.tokens, tok)
			refused := u.refused[tok]
			u.mu.Unlock()
			if p, err = u.verifier.Load().Verify(r.Context(), tok); refused || u.closed.Load() {
				err = errors.New("refused")
			}
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+u.url+`/.well-known/oauth-protected-resource"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/rest/whoami" { // a REST API's operation (user_account_openapi_e2e_test.go)
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, "subject="+p.Subject)
			return
		}
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			u.mu.Lock()
			if u.sessions[sid] == nil {
				u.sessions[sid] = map[string]bool{}
			}
			u.sessions[sid][p.Subject] = true
			u.mu.Unlock()
		}
		h.ServeHTTP(w, r.WithContext(auth.ContextWithPrincipal(r.Context(), p)))
	}))
	u.url = ts.URL
	t.Cleanup(func() {
		_ = h.Close()
		ts.Close()
		if v := u.verifier.Load(); v != nil {
			_ = v.Close()
		}
	})
	return u
}

// trust makes u accept the tokens of issuer for its URL.
func (u *subjectUpstream) trust(t *testing.T, issuer string) {
	t.Helper()
	v, err := oauth.NewVerifier(t.Context(), oauth.VerifierConfig{Issuer: issuer, Audiences: []string{u.url}, AllowInsecureHTTP: true})
	require.NoError(t, err)
	u.verifier.Store(v)
	u.issuer.Store(&issuer)
}

// refuse makes u answer tok 401 from now on, though its authorization
// server still deems it valid (its user changed her password, say).
func (u *subjectUpstream) refuse(tok string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.refused == nil {
		u.refused = map[string]bool{}
	}
	u.refused[tok] = true
}

func (u *subjectUpstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.tokens...)
}

// userRig is a gateway with an upstream of -upstream-auth NAME=user, the
// gateway's identity provider (idp) and the upstream's authorization
// server (as), both real, on two loopback addresses.
type userRig struct {
	v       *vigilAuth
	spans   *traceSink // every span vigil exported, over OTLP/HTTP
	idp, as *oidcProvider
	up      *subjectUpstream
	base    string // the gateway's own URL
	codes   []string
	// secretFile holds the gateway's client secret at the upstream's
	// authorization server.
	secretFile string
	mu         sync.Mutex
}

const (
	userGatewayClient = "vigil-gw"        // the gateway at the upstream's authorization server
	userSignInClient  = "vigil-signin"    // the gateway at its own identity provider
	userOtherClient   = "another-app"     // another client of the upstream's authorization server
	userUpSecret      = "up-secret-7c1e"  //nolint:gosec // a test's
	userSignInSecret  = "idp-secret-2b9a" //nolint:gosec // a test's
)

var userAccounts = []oidcClient{{ID: "alice", Secret: "alice-secret-1"}, {ID: "bob", Secret: "bob-secret-2"}}

func startUserRig(t *testing.T) *userRig {
	t.Helper()
	return startUserRigTTL(t, 0)
}

// startUserRigTTL is startUserRig whose upstream's authorization server
// issues access tokens valid for ttl (0: 600 s).
func startUserRigTTL(t *testing.T, ttl time.Duration) *userRig {
	t.Helper()
	port := authResource(t)
	base := strings.TrimSuffix(port.resource, "/mcp")
	r := startUserParties(t, base, port.resource, ttl)
	r.v = startVigilAuth(t, port, r.idp.Issuer(), r.env(), r.flags()...)
	return r
}

// startUserParties starts the parties of a userRig but the gateway, whose
// URL is base and resource resource, and whose upstream's authorization
// server issues access tokens valid for ttl (0: 600 s).
func startUserParties(t *testing.T, base, resource string, ttl time.Duration) *userRig {
	t.Helper()
	up := startSubjectUpstream(t)
	as := startOIDCProvider(t, oidcOptions{
		Resource: up.url, Host: "127.0.0.2", Accounts: []string{"alice", "bob"}, AccessTokenTTL: ttl,
		WebClients: []oidcWebClient{
			{ID: userGatewayClient, Secret: userUpSecret, RedirectURI: base + "/connect/callback"},
			{ID: userOtherClient, Secret: "other-secret", RedirectURI: "http://127.0.0.1:9/cb"},
		},
	})
	up.trust(t, as.Issuer())
	idp := startOIDCProvider(t, oidcOptions{
		Resource: resource, Accounts: []string{"alice", "bob"}, OtherClients: userAccounts,
		WebClients: []oidcWebClient{{ID: userSignInClient, Secret: userSignInSecret, RedirectURI: base + "/connect/signin"}},
	})
	file := filepath.Join(t.TempDir(), "up-secret")
	require.NoError(t, os.WriteFile(file, []byte(userUpSecret+"\n"), 0o600))
	return &userRig{spans: newTraceSink(t), idp: idp, as: as, up: up, base: base, secretFile: file}
}

// env is the gateway's environment in r.
func (r *userRig) env() []string {
	return []string{
		"CONNECT_SECRET=" + userSignInSecret, "OTEL_EXPORTER_OTLP_ENDPOINT=" + r.spans.url,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_TRACES_SAMPLER=always_on", "OTEL_BSP_SCHEDULE_DELAY=100",
	}
}

// flags are the gateway's flags of the user mode in r.
func (r *userRig) flags() []string {
	return []string{
		"-upstream", "u=" + r.up.url, "-upstream-auth", "u=user,client_id=" + userGatewayClient + ",client_secret=@" + r.secretFile + ",scopes=vigil.read",
		"-connect-client-id", userSignInClient, "-connect-client-secret", "env:CONNECT_SECRET",
	}
}

// token returns a gateway token of user (its sub is the user).
func (r *userRig) token(t *testing.T, user oidcClient) string {
	t.Helper()
	status, tok := r.idp.TokenFor(t, user, r.v.resource, "vigil.read")
	require.Equal(t, http.StatusOK, status)
	return tok.AccessToken
}

// browser is a user's browser: its cookies, the URLs it went through.
type browser struct {
	hc       *http.Client
	visited  []string
	stopAt   string // a host the browser is not sent to: open returns the redirect to it
	location string // where the last page redirected, when stopped
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	b := &browser{}
	b.hc = &http.Client{Jar: jar, Timeout: 20 * time.Second, Transport: &http.Transport{}, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if b.stopAt != "" && req.URL.Host == b.stopAt {
			return http.ErrUseLastResponse
		}
		b.visited = append(b.visited, req.URL.String())
		return nil
	}}
	t.Cleanup(b.hc.CloseIdleConnections)
	return b
}

var loginForm = regexp.MustCompile(`action="(/interaction/[^"]+/login)"`)

// open opens link and signs in as user at each login page on the way
// ("" signs in nowhere); it returns the last page's status and body.
func (b *browser) open(t *testing.T, link, user string) (int, string) {
	t.Helper()
	resp, err := b.hc.Get(link)
	require.NoError(t, err)
	for {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		b.location = resp.Header.Get("Location")
		m := loginForm.FindSubmatch(body)
		if m == nil || user == "" {
			return resp.StatusCode, string(body)
		}
		at := resp.Request.URL.ResolveReference(&url.URL{Path: string(m[1])})
		resp, err = b.hc.PostForm(at.String(), url.Values{"login": {user}})
		require.NoError(t, err)
	}
}

// elicitation is the URL elicitation of a -32042 error.
type elicitation struct {
	Mode, ElicitationID, URL, Message string
}

func urlElicitationOf(t *testing.T, code int64, data json.RawMessage) elicitation {
	t.Helper()
	require.Equal(t, int64(protocol.CodeURLElicitationRequired), code)
	var d struct {
		Elicitations []struct {
			Mode          string `json:"mode"`
			ElicitationID string `json:"elicitationId"`
			URL           string `json:"url"`
			Message       string `json:"message"`
		} `json:"elicitations"`
	}
	require.NoError(t, json.Unmarshal(data, &d), "%s", data)
	require.Len(t, d.Elicitations, 1)
	e := d.Elicitations[0]
	require.Equal(t, "url", e.Mode)
	require.NotEmpty(t, e.ElicitationID)
	return elicitation{Mode: e.Mode, ElicitationID: e.ElicitationID, URL: e.URL, Message: e.Message}
}

// call2026 calls tool as a stateless 2026-07-28 request with token.
func (r *userRig) call2026(t *testing.T, token, tool, args string) rpcMessage {
	t.Helper()
	return r.call2026With(t, token, tool, args, `{}`, "")
}

// call2026With is call2026 from a client of capabilities caps (JSON), with
// more members of params (`,"k":v...`, or "").
func (r *userRig) call2026With(t *testing.T, token, tool, args, caps, more string) rpcMessage {
	t.Helper()
	status, m := r.call2026Status(t, token, tool, args, caps, more)
	require.Equal(t, http.StatusOK, status)
	return m
}

// call2026Status is call2026With, which returns the answer's HTTP status
// too, whatever it is.
func (r *userRig) call2026Status(t *testing.T, token, tool, args, caps, more string) (int, rpcMessage) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + more + `,"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `,` +
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, r.v.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := r.v.hc.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	m, err := readResponse(resp, 1, nil)
	require.NoError(t, err)
	return resp.StatusCode, m
}

// call2025 calls tool on c, the session of one user.
func call2025(t *testing.T, c *e2eClient, tool string, args map[string]any) rpcMessage {
	t.Helper()
	m, err := c.callTool(t.Context(), tool, args, "")
	require.NoError(t, err)
	return m
}

// connect completes the URL elicitation e in a new browser signed in as
// user, and requires the page saying it is done.
func (r *userRig) connect(t *testing.T, e elicitation, user string) {
	t.Helper()
	require.True(t, strings.HasPrefix(e.URL, r.base+"/connect/"), e.URL)
	b := newBrowser(t)
	status, body := b.open(t, e.URL, user)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, "Your account is connected")
	r.remember(b)
}

// remember keeps the codes b carried, for the searches of TestUserAccount.
func (r *userRig) remember(b *browser) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range b.visited {
		if u, err := url.Parse(v); err == nil && u.Query().Get("code") != "" {
			r.codes = append(r.codes, u.Query().Get("code"))
		}
	}
}

func resultText(t *testing.T, m rpcMessage) string {
	t.Helper()
	require.Nil(t, m.Error, "%+v", m.Error)
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &res))
	require.NotEmpty(t, res.Content)
	return res.Content[0].Text
}

// TestUserAccount: alice and bob, each with a gateway token of their own,
// call the same tool of an upstream that acts as each user; the first call
// of each gets a URL elicitation (-32042, in the 2025-11-25 era for alice,
// 2026-07-28 for bob), completed in a browser signed in as themselves at
// the gateway's identity provider and the upstream's authorization server;
// then 20 of 20 calls of each, in both eras, reach the upstream as that
// user. gateway_connections lists the connection; gateway_disconnect
// removes it (revoked at the authorization server) and the next call asks
// again. No token or code shows in vigil's debug log, /metrics, any
// answer or any span it exported (attributes, events, statuses).
func TestUserAccount(t *testing.T) {
	r := startUserRig(t)
	alice, bob := r.token(t, userAccounts[0]), r.token(t, userAccounts[1])

	// alice, 2025-11-25: asked, connects, served as herself.
	ca := r.v.session(t, alice)
	m := call2025(t, ca, "whoami", nil)
	require.NotNil(t, m.Error)
	ea := urlElicitationOf(t, m.Error.Code, m.Error.Data)
	r.connect(t, ea, "alice")

	// bob, 2026-07-28: asked, connects.
	m = r.call2026(t, bob, "whoami", `{}`)
	require.NotNil(t, m.Error)
	r.connect(t, urlElicitationOf(t, m.Error.Code, m.Error.Data), "bob")

	cb := r.v.session(t, bob)
	counts := map[string]int{}
	for range 20 {
		counts["alice 2025 "+resultText(t, call2025(t, ca, "whoami", nil))]++
		counts["alice 2026 "+resultText(t, r.call2026(t, alice, "whoami", `{}`))]++
		counts["bob 2025 "+resultText(t, call2025(t, cb, "whoami", nil))]++
		counts["bob 2026 "+resultText(t, r.call2026(t, bob, "whoami", `{}`))]++
	}
	assert.Equal(t, map[string]int{
		"alice 2025 subject=alice": 20, "alice 2026 subject=alice": 20, "bob 2025 subject=bob": 20, "bob 2026 subject=bob": 20,
	}, counts)
	r.up.mu.Lock()
	for sid, subjects := range r.up.sessions {
		assert.Len(t, subjects, 1, "upstream session %s carried the tokens of %v", sid, subjects)
	}
	r.up.mu.Unlock()

	// alice's connections, then her disconnect: revoked, asked again.
	text := resultText(t, call2025(t, ca, "gateway_connections", nil))
	assert.Contains(t, text, `"upstream":"u"`)
	// The refresh token's revocation (RFC 7009) revokes the grant: 200.
	// oidc-provider revokes no JWT access token (400
	// unsupported_token_type): the grant's revocation is what it offers,
	// and what the answer says.
	text = resultText(t, call2025(t, ca, "gateway_disconnect", map[string]any{"upstream": "u"}))
	assert.True(t, strings.HasPrefix(text, "disconnected from u: the refresh token is revoked; "+
		"the authorization server revokes no access token of this kind (unsupported_token_type), so the last one lives until 20"), text)
	assert.Equal(t, 1, strings.Count(r.as.out.String(), "POST /token/revocation 200"), "alice's refresh token revoked at the authorization server")
	m = r.call2026(t, alice, "whoami", `{}`)
	require.NotNil(t, m.Error, "asked again")
	urlElicitationOf(t, m.Error.Code, m.Error.Data)
	assert.Equal(t, "subject=bob", resultText(t, call2025(t, cb, "whoami", nil)), "bob's stays")

	// The operator lists and revokes bob's (the admin endpoints: here on the one listener).
	who := url.Values{"issuer": {r.idp.Issuer()}, "subject": {"bob"}}
	resp, err := r.v.hc.Get(r.base + "/admin/connections?" + who.Encode())
	require.NoError(t, err)
	listed, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", listed)
	assert.Contains(t, string(listed), `"upstream":"u"`)
	who.Set("upstream", "u")
	resp, err = r.v.hc.Post(r.base+"/admin/connections/revoke?"+who.Encode(), "", nil)
	require.NoError(t, err)
	said, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "revoked")
	assert.Contains(t, string(said), "disconnected: the refresh token is revoked; ", "the access token is said to live")
	asked(t, call2025(t, cb, "whoami", nil))
	assert.Equal(t, 2, strings.Count(r.as.out.String(), "POST /token/revocation 200"), "bob's refresh token revoked too")

	// Nothing secret anywhere vigil shows.
	secrets := append(r.up.seen(), r.codes...)
	require.NotEmpty(t, secrets)
	shown := r.v.logs.String()
	for _, path := range []string{"/metrics", "/debug/vigil"} {
		resp, err := r.v.hc.Get(r.base + path)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		shown += string(b)
	}
	shown += string(m.Error.Data) + m.Error.Message
	assert.Contains(t, shown, `mcp_gateway_upstream_authorizations_total{event="completed",upstream="u"} 2`)
	require.NoError(t, r.v.proc.stop(10*time.Second), "vigil exports its last spans as it stops")
	spans := r.spans.exported()
	assert.Contains(t, spans, `"tools/call whoami"`, "the calls' spans reached the sink")
	assert.Contains(t, spans, "gateway_disconnect")
	t.Logf("%d spans exported, %d bytes of protojson searched", len(r.spans.received()), len(spans))
	shown += spans
	for _, s := range secrets {
		if strings.Count(s, ".") == 2 && strings.Contains(s, "eyJ") { // a JWT: its signature is what must not show
			s = s[strings.LastIndex(s, ".")+1:]
		}
		assert.NotContains(t, shown, s, "a token or code shows")
	}
}

// get returns the status and body of a GET of where in b.
func (b *browser) get(t *testing.T, where string) (int, string) {
	t.Helper()
	resp, err := b.hc.Get(where)
	require.NoError(t, err)
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, string(body)
}

// visitedPath returns the last URL b went through whose path is path.
func (b *browser) visitedPath(t *testing.T, path string) string {
	t.Helper()
	for i := len(b.visited) - 1; i >= 0; i-- {
		if u, err := url.Parse(b.visited[i]); err == nil && u.Path == path {
			return b.visited[i]
		}
	}
	t.Fatalf("no %s in %v", path, b.visited)
	return ""
}

// upstreamCallback opens link in b signed in as user at the gateway's
// identity provider, checks the authorization request to the upstream's
// authorization server, signs in there, and returns the URL of the
// gateway's callback it redirects to, not followed.
func (r *userRig) upstreamCallback(t *testing.T, b *browser, link, user string) *url.URL {
	t.Helper()
	as, err := url.Parse(r.as.Issuer())
	require.NoError(t, err)
	b.stopAt = as.Host
	status, body := b.open(t, link, user)
	require.Equal(t, http.StatusFound, status, body)
	to, err := url.Parse(b.location)
	require.NoError(t, err)
	require.Equal(t, as.Host, to.Host)
	q := to.Query()
	assert.Equal(t, "S256", q.Get("code_challenge_method"))
	assert.NotEmpty(t, q.Get("code_challenge"))
	assert.Equal(t, r.up.url, q.Get("resource"), "RFC 8707: the upstream")
	assert.Equal(t, userGatewayClient, q.Get("client_id"))
	require.NotEmpty(t, q.Get("state"))
	gw, err := url.Parse(r.base)
	require.NoError(t, err)
	b.stopAt = gw.Host
	status, body = b.open(t, b.location, user)
	require.Contains(t, []int{http.StatusFound, http.StatusSeeOther}, status, body)
	cb, err := url.Parse(b.location)
	require.NoError(t, err)
	require.Equal(t, "/connect/callback", cb.Path)
	require.NotEmpty(t, cb.Query().Get("code"))
	return cb
}

// otherClientCode returns a code the upstream's authorization server
// issued to another client, for user.
func (r *userRig) otherClientCode(t *testing.T, user string) string {
	t.Helper()
	b := newBrowser(t)
	b.stopAt = "127.0.0.1:9"
	q := url.Values{
		"client_id": {userOtherClient}, "response_type": {"code"}, "redirect_uri": {"http://127.0.0.1:9/cb"},
		"scope": {"vigil.read"}, "state": {"s"}, "resource": {r.up.url},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"},
	}
	status, _ := b.open(t, r.as.Issuer()+"/auth?"+q.Encode(), user)
	require.Contains(t, []int{http.StatusFound, http.StatusSeeOther}, status)
	to, err := url.Parse(b.location)
	require.NoError(t, err)
	require.NotEmpty(t, to.Query().Get("code"), b.location)
	return to.Query().Get("code")
}

// asked requires m to be a URL elicitation and returns it.
func asked(t *testing.T, m rpcMessage) elicitation {
	t.Helper()
	require.NotNil(t, m.Error, "want -32042, got %s", m.Result)
	return urlElicitationOf(t, m.Error.Code, m.Error.Data)
}

// TestUserAccountRefusals: bob opening alice's link, signed in as bob, gets
// 403 and nothing is stored for anyone; a browser that never signs in
// stores nothing; alice then completes the same link. A replayed
// callback (of the sign-in and of the upstream), a wrong state, a used
// link, a callback from another browser, a code issued to another
// client, and an authorization response naming another issuer (mix-up)
// are refused and store nothing.
func TestUserAccountRefusals(t *testing.T) {
	r := startUserRig(t)
	alice, bob := r.token(t, userAccounts[0]), r.token(t, userAccounts[1])
	ca, cb := r.v.session(t, alice), r.v.session(t, bob)
	ea := asked(t, call2025(t, ca, "whoami", nil))

	status, body := newBrowser(t).open(t, ea.URL, "bob")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, body, "someone else")
	status, body = newBrowser(t).open(t, ea.URL, "")
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "Sign in", "stopped at the identity provider's login")
	asked(t, r.call2026(t, alice, "whoami", `{}`)) // nothing stored for alice
	asked(t, r.call2026(t, bob, "whoami", `{}`))   // nor for bob

	b := newBrowser(t)
	status, body = b.open(t, ea.URL, "alice")
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "subject=alice", resultText(t, call2025(t, ca, "whoami", nil)))
	for _, path := range []string{"/connect/callback", "/connect/signin"} {
		status, _ = b.get(t, b.visitedPath(t, path))
		assert.Equal(t, http.StatusBadRequest, status, "%s replayed", path)
	}
	status, _ = b.get(t, r.base+"/connect/callback?code=x&state=wrong")
	assert.Equal(t, http.StatusBadRequest, status, "a wrong state")
	status, _ = b.get(t, ea.URL)
	assert.Equal(t, http.StatusGone, status, "a used link")

	// bob's flows, each stopped before its callback, which is then
	// tampered with; the last one is left as it is, and completes.
	code := r.otherClientCode(t, "bob")
	for _, c := range []struct {
		name   string
		tamper func(q url.Values) *browser // nil: bob's browser
	}{
		{"a code for another client", func(q url.Values) *browser { q.Set("code", code); return nil }},
		{"another browser's callback (no cookie)", func(url.Values) *browser { return newBrowser(t) }},
		{"an authorization response from another issuer (mix-up)", func(q url.Values) *browser { q.Set("iss", r.idp.Issuer()); return nil }},
		{"an authorization response without iss (RFC 9207)", func(q url.Values) *browser { q.Del("iss"); return nil }},
	} {
		bb := newBrowser(t)
		cbURL := r.upstreamCallback(t, bb, asked(t, call2025(t, cb, "whoami", nil)).URL, "bob")
		q := cbURL.Query()
		if other := c.tamper(q); other != nil {
			bb = other
		}
		cbURL.RawQuery = q.Encode()
		status, _ = bb.get(t, cbURL.String())
		assert.Equal(t, http.StatusForbidden, status, c.name)
		asked(t, call2025(t, cb, "whoami", nil)) // nothing stored for bob
	}
	bb := newBrowser(t)
	cbURL := r.upstreamCallback(t, bb, asked(t, call2025(t, cb, "whoami", nil)).URL, "bob")
	status, body = bb.get(t, cbURL.String())
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "subject=bob", resultText(t, call2025(t, cb, "whoami", nil)))

	resp, err := r.v.hc.Get(r.base + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Contains(t, string(metrics), `mcp_gateway_upstream_authorizations_total{event="completed",upstream="u"} 2`)
	assert.Contains(t, string(metrics), `mcp_gateway_upstream_authorizations_total{event="refused",upstream="u"} 5`, "bob's sign-in on alice's link, four callbacks")
	text := resultText(t, call2025(t, ca, "gateway_connections", nil))
	assert.Equal(t, 1, strings.Count(text, `"upstream"`), text)
}

// TestUserAccountInputRound: a 2026-07-28 caller that declared the
// elicitation url capability is asked as the era asks, an input_required
// result whose one input request is elicitation/create in url mode; the
// user completes it in a browser, the client retries with the requestState and
// an accept, and the call runs as the user.
func TestUserAccountInputRound(t *testing.T) {
	r := startUserRig(t)
	bob := r.token(t, userAccounts[1])
	const caps = `{"elicitation":{"url":{}}}`
	m := r.call2026With(t, bob, "whoami", `{}`, caps, "")
	require.Nil(t, m.Error, "%+v", m.Error)
	var res struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string `json:"method"`
			Params struct {
				Mode, URL, Message, ElicitationID string
			} `json:"params"`
		} `json:"inputRequests"`
		RequestState string `json:"requestState"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &res), "%s", m.Result)
	require.Equal(t, "input_required", res.ResultType, "%s", m.Result)
	require.Len(t, res.InputRequests, 1, "%s", m.Result)
	require.NotEmpty(t, res.RequestState)
	var key string
	var e elicitation
	for k, in := range res.InputRequests {
		key = k
		assert.Equal(t, "elicitation/create", in.Method)
		e = elicitation{Mode: in.Params.Mode, URL: in.Params.URL, Message: in.Params.Message}
	}
	require.Equal(t, "url", e.Mode, "%s", m.Result)
	assert.Contains(t, e.Message, "your account at u")
	retry := `,"inputResponses":{"` + key + `":{"action":"accept"}},"requestState":"` + res.RequestState + `"`
	r.connect(t, e, "bob")
	assert.Equal(t, "subject=bob", resultText(t, r.call2026With(t, bob, "whoami", `{}`, caps, retry)))
	assert.Equal(t, "subject=bob", resultText(t, r.call2026With(t, bob, "whoami", `{}`, caps, "")), "asked no more")
}

// TestUserAccountElicitURL: a 2025-11-25 session that declared the
// elicitation url capability is sent elicitation/create in url mode on the
// call's stream; the client accepts, the user completes the flow in a
// browser, the session is told notifications/elicitation/complete with the
// elicitationId, and the same call then answers as the user.
func TestUserAccountElicitURL(t *testing.T) {
	r := startUserRig(t)
	alice := r.token(t, userAccounts[0])
	c := newE2EClient(r.v.url, &http.Client{Transport: bearer{token: alice, base: r.v.hc.Transport}, Timeout: 30 * time.Second})
	c.caps = map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
	require.NoError(t, c.initialize(t.Context()))

	id, msg := c.request("tools/call", toolParams("whoami", nil, "", ""))
	resp, err := c.post(t.Context(), msg)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var asked elicitation
	var completed []string
	m, err := readResponse(resp, id, func(o rpcMessage) {
		switch o.Method {
		case "elicitation/create":
			var p struct{ Mode, URL, Message, ElicitationID string }
			require.NoError(t, json.Unmarshal(o.Params, &p))
			asked = elicitation{Mode: p.Mode, URL: p.URL, Message: p.Message, ElicitationID: p.ElicitationID}
			require.Equal(t, "url", asked.Mode, "%s", o.Params)
			require.NotEmpty(t, asked.ElicitationID)
			ack, err := c.post(t.Context(), map[string]any{"jsonrpc": "2.0", "id": o.ID, "result": map[string]any{"action": "accept"}})
			require.NoError(t, err)
			_ = ack.Body.Close()
			require.Equal(t, http.StatusAccepted, ack.StatusCode)
			r.connect(t, asked, "alice")
		case "notifications/elicitation/complete":
			var p struct{ ElicitationID string }
			require.NoError(t, json.Unmarshal(o.Params, &p))
			completed = append(completed, p.ElicitationID)
		}
	})
	require.NoError(t, err)
	require.NotEmpty(t, asked.URL, "no elicitation/create on the call's stream")
	assert.Equal(t, "subject=alice", resultText(t, m), "the same call, once the user connected")
	assert.Equal(t, []string{asked.ElicitationID}, completed, "notifications/elicitation/complete")
	assert.Equal(t, "subject=alice", resultText(t, call2025(t, c, "whoami", nil)), "asked no more")
}

// TestUserAccountRefresh: through one vigil, once alice's access token is
// due (its authorization server issues them for 6 s: refreshed in their
// last 3 s), her next call succeeds as alice without asking her again,
// through one refresh, counted; the call after it uses the refreshed
// token without another.
func TestUserAccountRefresh(t *testing.T) {
	const ttl = 6 * time.Second
	r := startUserRigTTL(t, ttl)
	alice := r.token(t, userAccounts[0])
	e := asked(t, r.call2026(t, alice, "whoami", `{}`))
	connected := time.Now()
	r.connect(t, e, "alice")
	assert.Equal(t, "subject=alice", resultText(t, r.call2026(t, alice, "whoami", `{}`)))
	refreshes := func() int64 {
		return scrapeSum(t, strings.TrimPrefix(r.base, "http://"), "mcp_gateway_account_refreshes_total")
	}
	require.Zero(t, refreshes())
	require.Less(t, time.Since(connected), ttl/2, "the first call came too late for the test's timing")

	time.Sleep(time.Until(connected.Add(ttl/2 + 500*time.Millisecond))) // a token's age, not an order between goroutines
	assert.Equal(t, "subject=alice", resultText(t, r.call2026(t, alice, "whoami", `{}`)), "served, not asked")
	assert.Equal(t, "subject=alice", resultText(t, r.call2026(t, alice, "whoami", `{}`)))
	assert.Equal(t, int64(1), refreshes(), "one refresh")
	assert.Zero(t, scrapeSum(t, strings.TrimPrefix(r.base, "http://"), "mcp_gateway_account_refresh_failures_total"))
	assert.Len(t, tokensOf(t, r.up.seen(), "alice"), 2, "alice's first token, then the refreshed one")
}

// TestUserAccountInputStateOnce: a 2026-07-28 requestState is accepted
// once. bob's client, asked with an input_required result, retries with
// its requestState before bob finished: the retry is answered -32042 with
// a fresh link (nothing is stored yet); the same requestState again is
// refused (HTTP 400, -32602, used already), before and after bob completes the
// first link, which still completes; a fresh call then runs as bob.
func TestUserAccountInputStateOnce(t *testing.T) {
	r := startUserRig(t)
	bob := r.token(t, userAccounts[1])
	const caps = `{"elicitation":{"url":{}}}`
	first, retry := inputRound(t, r.call2026With(t, bob, "whoami", `{}`, caps, ""))

	again := asked(t, r.call2026With(t, bob, "whoami", `{}`, caps, retry))
	assert.NotEqual(t, first.URL, again.URL, "the retry before bob finished: -32042, a fresh link")
	refusedState(t, r, bob, caps, retry, "before bob finished")
	r.connect(t, first, "bob")
	refusedState(t, r, bob, caps, retry, "after bob finished")
	assert.Equal(t, "subject=bob", resultText(t, r.call2026With(t, bob, "whoami", `{}`, caps, "")), "a fresh call runs as bob")
}

// inputRound returns the URL elicitation of m, an input_required result
// whose one input request is elicitation/create in url mode, and the
// members of params of a retry that accepts it with its requestState.
func inputRound(t *testing.T, m rpcMessage) (elicitation, string) {
	t.Helper()
	require.Nil(t, m.Error, "%+v", m.Error)
	var res struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Params struct{ Mode, URL string } `json:"params"`
		} `json:"inputRequests"`
		RequestState string `json:"requestState"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &res), "%s", m.Result)
	require.Equal(t, "input_required", res.ResultType, "%s", m.Result)
	require.Len(t, res.InputRequests, 1)
	require.NotEmpty(t, res.RequestState)
	for key, in := range res.InputRequests {
		require.Equal(t, "url", in.Params.Mode)
		return elicitation{Mode: in.Params.Mode, URL: in.Params.URL}, `,"inputResponses":{"` + key + `":{"action":"accept"}},"requestState":"` + res.RequestState + `"`
	}
	return elicitation{}, ""
}

// refusedState requires the retry of token on r (params' members retry)
// to be refused as a requestState used already: HTTP 400, -32602.
func refusedState(t *testing.T, r *userRig, token, caps, retry, when string) {
	t.Helper()
	status, m := r.call2026Status(t, token, "whoami", `{}`, caps, retry)
	assert.Equal(t, http.StatusBadRequest, status, when)
	require.NotNil(t, m.Error, "%s: the requestState replayed was accepted: %s", when, m.Result)
	assert.Equal(t, int64(protocol.CodeInvalidParams), m.Error.Code, when)
	assert.Contains(t, m.Error.Message, "used already", when)
}

// TestUserAccountTSClient: the TypeScript SDK v2 client (2.4.0) calls the
// user-mode upstream's tool through vigil with the user's gateway token,
// in both eras: declaring no url elicitation, its call rejects with the
// SDK's UrlElicitationRequiredError (-32042) carrying the link, which the
// test completes in a browser signed in as the user, and the client's
// retry runs as the user; declaring the elicitation url capability, its
// elicitation/create handler gets the link (2025-11-25: on the call's
// stream; 2026-07-28: the input request of an input_required result,
// fulfilled by the SDK), accepts once the user is done, and the same call
// answers as the user. The admin endpoint disconnects the user between
// runs, so that each is asked.
func TestUserAccountTSClient(t *testing.T) {
	node := requireOIDCProvider(t)
	if _, err := os.Stat(filepath.Join(dpopClientDir, "node_modules", "@modelcontextprotocol", "client")); err != nil {
		missingComponent(t, dpopClientDir+"/node_modules is missing; run `make test` (or `make clientv2-deps`) to install the TypeScript SDK v2 client")
	}
	r := startUserRig(t)
	for _, c := range []struct {
		era, mode string
		user      oidcClient
	}{
		{"legacy", "error", userAccounts[0]},
		{"modern", "error", userAccounts[1]},
		{"legacy", "url", userAccounts[0]},
		{"modern", "url", userAccounts[1]},
	} {
		t.Run(c.era+"/"+c.mode, func(t *testing.T) {
			out := r.runTSClient(t, node, r.token(t, c.user), c.era, c.mode, c.user.ID)
			assert.Contains(t, out, "result subject="+c.user.ID+"\n", out)
			if c.era == "legacy" && c.mode == "url" {
				assert.Contains(t, out, "complete ", "notifications/elicitation/complete")
			}
			who := url.Values{"issuer": {r.idp.Issuer()}, "subject": {c.user.ID}, "upstream": {"u"}}
			resp, err := r.v.hc.Post(r.base+"/admin/connections/revoke?"+who.Encode(), "", nil)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
}

// runTSClient runs user-account-client.mjs against r's vigil with token
// in era and mode, completes in a browser signed in as user each link it
// prints, and returns its output.
func (r *userRig) runTSClient(t *testing.T, node, token, era, mode, user string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "user-account-client.mjs", r.v.url, "whoami", era, mode)
	cmd.Dir = dpopClientDir
	cmd.Env = append(os.Environ(), "GATEWAY_TOKEN="+token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var out strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := lines.Text()
		out.WriteString(line + "\n")
		if link, ok := strings.CutPrefix(line, "link "); ok {
			r.connect(t, elicitation{URL: link}, user)
			_, err := io.WriteString(stdin, "done\n")
			require.NoError(t, err)
		}
	}
	_ = stdin.Close()
	require.NoError(t, cmd.Wait(), "user-account-client.mjs:\n%s\n%s", out.String(), stderr.String())
	t.Logf("TypeScript SDK v2, %s, %s: %s", era, mode, strings.ReplaceAll(out.String(), "\n", "; "))
	return out.String()
}
