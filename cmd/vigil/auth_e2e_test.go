package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// End-to-end authorization tests: the vigil binary (built by TestMain) as an
// OAuth 2.1 resource server, the real authorization server of
// oidc_provider_test.go, and, for the client side, the official TypeScript
// SDK (testdata/interop/auth-client.mjs) or raw HTTP.
//
// They assume the flags and environment of the auth wiring: -auth-issuer,
// -auth-tool-scopes sleep=vigil.slow, -auth-resource defaulting to
// http://HOST:PORT/mcp, VIGIL_AUTH_INTROSPECTION_CLIENT_ID and
// VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET switching to introspection; and the
// answers of the guard: 401 with a Bearer challenge naming
// resource_metadata, 403 error="insufficient_scope" with the scope needed,
// 503 when the authorization server cannot be asked.

// vigilAuth is a running vigil that requires bearer tokens.
type vigilAuth struct {
	proc     *peerProcess
	url      string // its /mcp URL, which is also its resource identifier
	resource string
	hc       *http.Client
	logs     *urlWatcher // its output
}

// authResource reserves a free loopback port for vigil and returns vigil's
// -http address and resource URL, which the authorization server must know
// before vigil starts. The port stays held (so that the provider, started on
// port 0, cannot take it) until startVigilAuth releases it.
func authResource(t *testing.T) *vigilPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	addr := ln.Addr().String()
	return &vigilPort{ln: ln, addr: addr, resource: "http://" + addr + "/mcp"}
}

// vigilPort is a port reserved for vigil.
type vigilPort struct {
	ln       net.Listener
	addr     string
	resource string
}

// startVigilAuth starts vigil -http <port> -auth-issuer issuer with the extra
// flags and environment (VIGIL_* and OTEL_* of the test's own environment
// are dropped) and waits for it to serve.
func startVigilAuth(t *testing.T, port *vigilPort, issuer string, env []string, extra ...string) *vigilAuth {
	t.Helper()
	addr, resource := port.addr, port.resource
	require.NoError(t, port.ln.Close())
	environ := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "OTEL_") || strings.HasPrefix(kv, "VIGIL_")
	})
	environ = append(environ, env...)
	logs := &urlWatcher{found: make(chan string, 1)}
	args := append([]string{"-http", addr, "-log-level", "debug", "-auth-issuer", issuer}, extra...)
	p := startPeer(t, "vigil", logs, environ, vigilBin, args...)
	v := &vigilAuth{proc: p, resource: resource, hc: &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}, logs: logs}
	t.Cleanup(v.hc.CloseIdleConnections)
	select {
	case v.url = <-logs.found:
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("vigil exited before serving: %v\n%s", err, logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("vigil did not log its URL within 30s:\n%s", logs.String())
	}
	require.Equal(t, resource, v.url, "vigil's MCP URL is its resource identifier")
	return v
}

// authAnswer is vigil's answer to one request.
type authAnswer struct {
	status    int
	challenge string            // WWW-Authenticate
	params    map[string]string // the challenge's auth-params
	body      string
}

var challengeParam = regexp.MustCompile(`([a-zA-Z_]+)="([^"]*)"`)

// initialize POSTs an initialize request to vigil with token as a bearer
// token (none if empty).
func (v *vigilAuth) initialize(t *testing.T, token string) authAnswer {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"vigil-auth-test","version":"1"}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, v.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := v.hc.Do(req)
	require.NoError(t, err, "POST %s", v.url)
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	a := authAnswer{status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate"), params: map[string]string{}, body: string(b)}
	for _, m := range challengeParam.FindAllStringSubmatch(a.challenge, -1) {
		a.params[strings.ToLower(m[1])] = m[2]
	}
	return a
}

// requireRefused requires a 401 Bearer challenge with error (none when
// empty) that names vigil's Protected Resource Metadata.
func (a authAnswer) requireRefused(t *testing.T, status int, errCode string) {
	t.Helper()
	require.Equal(t, status, a.status, "answer %+v", a)
	require.True(t, strings.HasPrefix(strings.ToLower(a.challenge), "bearer"), "WWW-Authenticate %q is a Bearer challenge", a.challenge)
	assert.Equal(t, errCode, a.params["error"], "WWW-Authenticate %q", a.challenge)
	assert.NotEmpty(t, a.params["resource_metadata"], "WWW-Authenticate %q names resource_metadata", a.challenge)
}

// bearer is an http.RoundTripper that adds a bearer token to each request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(req)
}

// session opens an MCP session on vigil with token.
func (v *vigilAuth) session(t *testing.T, token string) *e2eClient {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token, base: v.hc.Transport}, Timeout: 10 * time.Second}
	c := newE2EClient(v.url, hc)
	require.NoError(t, c.initialize(t.Context()))
	return c
}

// protectedResourceMetadata is RFC 9728 §2's document, the parts used here.
type protectedResourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
	BearerMethods        []string `json:"bearer_methods_supported"`
}

// TestAuthTSClientCredentials runs the official TypeScript SDK's
// client-credentials flow (testdata/interop/auth-client.mjs) against vigil
// with a real authorization server: discovery from a 401, a token for
// vigil's resource with vigil.read, tools listed and called within that
// scope, a 403 insufficient_scope on sleep (which needs vigil.slow), then a
// token with vigil.slow and sleep called. AWAITS the auth wiring
// (-auth-issuer, -auth-tool-scopes).
func TestAuthTSClientCredentials(t *testing.T) {
	node := requireInteropPrereqs(t)
	port := authResource(t)
	as := startOIDCProvider(t, oidcOptions{Resource: port.resource})
	v := startVigilAuth(t, port, as.Issuer(), nil, "-auth-tool-scopes", "sleep=vigil.slow")
	runAuthTSClient(t, node, v, as)
	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// runAuthTSClient checks what the SDK relies on (the 401 challenge, the
// Protected Resource Metadata), then runs auth-client.mjs against v and
// checks its transcript.
func runAuthTSClient(t *testing.T, node string, v *vigilAuth, as *oidcProvider) {
	t.Helper()
	resource := v.resource

	// What the SDK relies on, checked plainly first.
	a := v.initialize(t, "")
	a.requireRefused(t, http.StatusUnauthorized, "")
	assert.NotContains(t, a.params, "error", "no error code when no token was sent (RFC 6750 §3.1)")
	base := strings.TrimSuffix(resource, "/mcp")
	assert.Contains(t, []string{base + "/.well-known/oauth-protected-resource/mcp", base + "/.well-known/oauth-protected-resource"},
		a.params["resource_metadata"])
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		var prm protectedResourceMetadata
		require.NoError(t, getJSON(t.Context(), v.hc, base+path, &prm), "GET %s", path)
		assert.Equal(t, resource, prm.Resource, "%s: resource", path)
		assert.Equal(t, []string{as.Issuer()}, prm.AuthorizationServers, "%s: authorization_servers", path)
		if prm.BearerMethods != nil {
			assert.Equal(t, []string{"header"}, prm.BearerMethods, "%s: bearer_methods_supported", path)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	client := exec.CommandContext(ctx, node, "auth-client.mjs",
		"--url", v.url, "--issuer", as.Issuer(), "--client-id", oidcClientID, "--client-secret", oidcClientSecret)
	client.Dir = interopDir
	client.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	client.Stdout, client.Stderr = &stdout, &stderr
	err := client.Run()
	t.Logf("auth-client.mjs stderr:\n%s", stderr.String())
	t.Logf("auth-client.mjs transcript:\n%s", stdout.String())
	require.NoError(t, ctx.Err(), "auth-client.mjs timed out")

	var transcript struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
		Steps []struct {
			Step         string   `json:"step"`
			Tools        []string `json:"tools"`
			Status       int      `json:"status"`
			Challenge    string   `json:"challenge"`
			TokenRequest struct {
				GrantType string `json:"grant_type"`
				Scope     string `json:"scope"`
				Resource  string `json:"resource"`
			} `json:"token_request"`
			GrantedScope string `json:"granted_scope"`
			SDKStepUp    *struct {
				Outcome string `json:"outcome"`
			} `json:"sdk_step_up"`
		} `json:"steps"`
		StepUp string `json:"step_up"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &transcript), "the transcript is JSON")
	require.NoError(t, err, "auth-client.mjs failed: %s", transcript.Error)
	require.True(t, transcript.OK, transcript.Error)

	var names []string
	for _, s := range transcript.Steps {
		names = append(names, s.Step)
	}
	want := []string{"connect", "tools/list", "tools/call echo", "tools/call sleep with vigil.read"}
	if transcript.StepUp != "sdk step-up" {
		want = append(want, "connect with vigil.read vigil.slow", "tools/list with vigil.slow", "tools/call sleep with vigil.slow")
	}
	want = append(want, "closed")
	require.Equal(t, want, names, "the steps")

	connect := transcript.Steps[0]
	assert.Equal(t, "client_credentials", connect.TokenRequest.GrantType)
	assert.Equal(t, resource, connect.TokenRequest.Resource)
	assert.Equal(t, "vigil.read", connect.TokenRequest.Scope)
	assert.Equal(t, "vigil.read", connect.GrantedScope)
	assert.Contains(t, transcript.Steps[1].Tools, "echo")
	assert.NotContains(t, transcript.Steps[1].Tools, "sleep")
	refused := transcript.Steps[3]
	assert.Equal(t, http.StatusForbidden, refused.Status)
	assert.Contains(t, refused.Challenge, `error="insufficient_scope"`)
	require.NotNil(t, refused.SDKStepUp)
	t.Logf("the SDK's own step-up: %s; the larger scope came from: %s", refused.SDKStepUp.Outcome, transcript.StepUp)
	if transcript.StepUp != "sdk step-up" {
		assert.Contains(t, transcript.Steps[5].Tools, "sleep", "tools/list with vigil.slow")
	}
}

// accessClaims are the claims the provider puts in its JWT access tokens,
// for tokens the test signs itself (with a fresh jti, so that no verifier
// cache has seen them).
func accessClaims(issuer, resource string, scopes ...string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": issuer, "aud": resource, "sub": oidcClientID, "client_id": oidcClientID,
		"scope": strings.Join(scopes, " "), "iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
		"jti": rand.Text(),
	}
}

// eventually calls f every 20 ms until it returns nil, failing the test
// with f's last error if that takes longer than within. It returns how long
// it took.
func eventually(t *testing.T, what string, within time.Duration, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := f()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("%s: not within %v: %v", what, within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Key rotation timing. A token with a key id vigil has not seen makes it
// refetch the JWKS at once (rate-limited), so a new key is usable within
// rotationAccept. Nothing before the rotation may present an unknown key
// id, or the refetch the new key needs could be spent. A retired key stays in vigil's copy of the JWKS until vigil
// refetches it: on its background refresh, or on the next unknown key id the
// rate limit lets through. The test presents unknown key ids until the
// retired key is refused, for at most rotationRetire. (keyfunc's defaults, a
// refetch on an unknown kid at most every 5 minutes and a refresh every
// hour, would make that up to 5 minutes after the first refetch: the wiring
// must let a second unknown-kid refetch through within rotationRetire.)
const (
	rotationAccept = time.Second
	rotationRetire = 10 * time.Second
)

// TestAuthKeyRotation rotates the authorization server's signing key under
// a running vigil: restarted with [new, old] keys, a token of the new key is
// accepted within a second and one of the old key still is; restarted with
// [new], a token of the old key is refused (401 invalid_token, reason
// unknown_key) once vigil has refetched the JWKS. AWAITS the auth wiring.
func TestAuthKeyRotation(t *testing.T) {
	oldKey, newKey, strayKey := newOIDCKey(t, "old"), newOIDCKey(t, "new"), newOIDCKey(t, "never-published")
	port := authResource(t)
	resource := port.resource
	as := startOIDCProvider(t, oidcOptions{Resource: resource, Keys: []*oidcKey{oldKey}})
	v := startVigilAuth(t, port, as.Issuer(), nil)

	oldToken := as.Token(t, "vigil.read")
	require.Equal(t, http.StatusOK, v.initialize(t, oldToken).status, "a token of the only key")
	// (No unknown key id yet: that would spend the refetch the new key needs.)

	// [new, old]: the new key is fetched on its first token.
	as.Restart(t, newKey, oldKey)
	newToken := as.Token(t, "vigil.read")
	tok, _ := unverifiedJWT(t, newToken)
	require.Equal(t, "new", tok.Header["kid"])
	took := eventually(t, "a token of the new key accepted", rotationAccept, func() error {
		if a := v.initialize(t, newToken); a.status != http.StatusOK {
			return fmt.Errorf("HTTP %d %s", a.status, a.challenge)
		}
		return nil
	})
	t.Logf("new key accepted after %v", took.Round(time.Millisecond))
	require.Equal(t, http.StatusOK, v.initialize(t, oldToken).status, "a token of the old key during the overlap")
	require.Equal(t, http.StatusOK, v.initialize(t, oldKey.Sign(t, accessClaims(as.Issuer(), resource, "vigil.read"))).status,
		"a fresh token of the old key during the overlap")

	// [new]: the old key is retired.
	as.Restart(t, newKey)
	require.Equal(t, []string{"new"}, as.publishedKIDs(t))
	// The test's own tokens are acceptable as such: one of the new key is.
	require.Equal(t, http.StatusOK, v.initialize(t, newKey.Sign(t, accessClaims(as.Issuer(), resource, "vigil.read"))).status,
		"a token the test signed with the current key")
	// A token vigil verified before stays valid in its cache until it
	// expires: the test signs fresh ones with the retired key.
	took = eventually(t, "a fresh token of the retired key refused (vigil must refetch its JWKS on an unknown key id "+
		"within 10s of its previous refetch; keyfunc's default limiter allows one every 5 minutes)", rotationRetire, func() error {
		// An unknown key id makes vigil refetch the JWKS (when its rate limit allows).
		if a := v.initialize(t, strayKey.Sign(t, accessClaims(as.Issuer(), resource, "vigil.read"))); a.status != http.StatusUnauthorized {
			return fmt.Errorf("a token of an unpublished key: HTTP %d", a.status)
		}
		a := v.initialize(t, oldKey.Sign(t, accessClaims(as.Issuer(), resource, "vigil.read")))
		if a.status != http.StatusUnauthorized {
			return fmt.Errorf("a fresh token of the retired key: HTTP %d", a.status)
		}
		a.requireRefused(t, http.StatusUnauthorized, "invalid_token")
		return nil
	})
	t.Logf("retired key refused after %v", took.Round(time.Millisecond))
	require.Equal(t, http.StatusOK, v.initialize(t, newToken).status, "the new key's token after the retirement")

	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// TestAuthIntrospection: with introspection credentials in the environment
// vigil asks the authorization server about opaque tokens (RFC 7662): a
// token is accepted and its scopes apply, an unknown one is refused, and
// while the authorization server is down a token vigil has not seen yet is
// answered 503 (not 401: the token may be fine). AWAITS the auth wiring.
func TestAuthIntrospection(t *testing.T) {
	introspector := oidcClient{"vigil-resource-server", "vigil-introspection-secret"}
	port := authResource(t)
	as := startOIDCProvider(t, oidcOptions{Resource: port.resource, Opaque: true, Introspector: &introspector})
	v := startVigilAuth(t, port, as.Issuer(), []string{
		"VIGIL_AUTH_INTROSPECTION_CLIENT_ID=" + introspector.ID,
		"VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET=" + introspector.Secret,
	}, "-auth-tool-scopes", "sleep=vigil.slow")

	token := as.Token(t, "vigil.read")
	_, _, err := jwt.NewParser().ParseUnverified(token, jwt.MapClaims{})
	require.Error(t, err, "the provider issues opaque tokens")

	c := v.session(t, token)
	m, err := c.callTool(t.Context(), "echo", map[string]any{"text": "introspected"}, "")
	require.NoError(t, err)
	require.Nil(t, m.Error, "echo with an introspected token")
	// Scopes come from the introspection answer: sleep needs vigil.slow.
	_, msg := c.request("tools/call", toolParams("sleep", map[string]any{"ms": 1}, "", ""))
	resp, err := c.post(t.Context(), msg)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "sleep without vigil.slow")
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "vigil.slow")
	both := as.Token(t, "vigil.read", "vigil.slow")
	m, err = v.session(t, both).callTool(t.Context(), "sleep", map[string]any{"ms": 1}, "")
	require.NoError(t, err)
	require.Nil(t, m.Error, "sleep with vigil.slow")

	v.initialize(t, "not-a-token-the-provider-issued").requireRefused(t, http.StatusUnauthorized, "invalid_token")

	// The authorization server goes down: a token vigil has not verified yet
	// cannot be checked.
	unseen := as.Token(t, "vigil.read")
	as.Stop(t)
	a := v.initialize(t, unseen)
	assert.Equal(t, http.StatusServiceUnavailable, a.status, "introspection impossible: %+v", a)

	// It comes back (with no memory of its tokens): a new token works again.
	as.Restart(t, as.Keys()...)
	require.Equal(t, http.StatusOK, v.initialize(t, as.Token(t, "vigil.read")).status, "after the authorization server is back")

	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}
