package main

import (
	"bufio"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/wwwauth"
	"github.com/vigil-mcp/vigil/middleware/oauth"
)

// The service-level acceptance matrix of authorization: the vigil binary
// with the real authorization server of oidc_provider_test.go, a table of
// bad requests each checked for its exact status, its WWW-Authenticate
// challenge and the one failure reason it counts; and, in introspection
// mode, a burst of one token that costs one introspection, and the
// answers while the authorization server is down.

// matrixInitialize is a 2025-11-25 initialize request.
const matrixInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"vigil-auth-matrix","version":"1"}}}`

// matrixCall returns a tools/call request of tool with arguments args (JSON).
func matrixCall(tool, args string) string {
	return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

// authProbe is one request to vigil's /mcp.
type authProbe struct {
	method  string   // default POST
	query   string   // raw query of the URL, without "?"
	auth    []string // Authorization header values, each a header line of its own
	session string   // Mcp-Session-Id (2025-11-25), if any
	body    string   // default matrixInitialize
}

// probe sends p to v and returns the answer, its challenge parsed with
// wwwauth.Parse (which must accept it, as a Bearer challenge, when
// there is one).
func (v *vigilAuth) probe(t *testing.T, p authProbe) authAnswer {
	t.Helper()
	u := v.url
	if p.query != "" {
		u += "?" + p.query
	}
	method, body := p.method, p.body
	if method == "" {
		method = http.MethodPost
	}
	if body == "" && method == http.MethodPost {
		body = matrixInitialize
	}
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(body))
	require.NoError(t, err)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Body, req.ContentLength = http.NoBody, 0
		req.Header.Set("Accept", "text/event-stream")
	}
	for _, a := range p.auth {
		req.Header.Add("Authorization", a)
	}
	if p.session != "" {
		req.Header.Set("Mcp-Session-Id", p.session)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := v.hc.Do(req)
	require.NoError(t, err, "POST %s", u)
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	a := authAnswer{status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate"), body: string(b)}
	if a.challenge != "" {
		scheme, params, err := wwwauth.Parse(a.challenge)
		require.NoError(t, err, "WWW-Authenticate %q", a.challenge)
		require.True(t, strings.EqualFold(scheme, "Bearer"), "WWW-Authenticate %q is a Bearer challenge", a.challenge)
		a.params = params
	}
	return a
}

// authFailures returns mcp_server_auth_failures_total by reason.
func (v *vigilAuth) authFailures(t *testing.T) map[string]float64 {
	t.Helper()
	families := svcMetrics(t, v.hc, strings.TrimSuffix(v.url, "/mcp"))
	mf, ok := families[mcpconv.MetricAuthFailures]
	require.True(t, ok, "/metrics has no %s", mcpconv.MetricAuthFailures)
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "reason" {
				out[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	for _, r := range oauth.Reasons() {
		require.Contains(t, out, r.String(), "every reason is exposed from the start")
	}
	return out
}

// requireCounted requires that between before and after the failure
// counter of reason rose by exactly one and no other reason moved; with
// reason "", that nothing moved.
func requireCounted(t *testing.T, before, after map[string]float64, reason string) {
	t.Helper()
	want := maps.Clone(before)
	if reason != "" {
		want[reason]++
	}
	require.Equal(t, want, after, "mcp_server_auth_failures_total by reason: want %q +1 and nothing else", reason)
}

// b64 is base64url without padding, the encoding of JWT segments.
var b64 = base64.RawURLEncoding

// tamperedSubject returns token with its payload re-encoded with sub
// replaced, and its original signature.
func tamperedSubject(t *testing.T, token, sub string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	payload, err := b64.DecodeString(parts[1])
	require.NoError(t, err)
	claims := map[string]any{}
	require.NoError(t, json.Unmarshal(payload, &claims))
	require.NotEqual(t, sub, claims["sub"])
	claims["sub"] = sub
	payload, err = json.Marshal(claims)
	require.NoError(t, err)
	parts[1] = b64.EncodeToString(payload)
	return strings.Join(parts, ".")
}

// headerTooLarge sends a request to addr whose headers are over net/http's
// default limit (http.DefaultMaxHeaderBytes, 1 MiB, which vigil keeps)
// over a raw connection, reading the answer while still writing, and
// returns the answer's status.
func headerTooLarge(t *testing.T, addr string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	require.NoError(t, conn.SetDeadline(time.Now().Add(20*time.Second)))
	token := strings.Repeat("a", 2<<20)
	req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" +
		"Authorization: Bearer " + token + "\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(matrixInitialize)) + matrixInitialize
	go func() { _, _ = io.WriteString(conn, req) }() // the server stops reading: the write may fail
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "the answer to a request with 2 MiB of headers")
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestAuthBadTokens: one vigil (JWT verifier, -auth-scopes vigil.read,
// sleep needing vigil.slow) with the real authorization server, and a
// table of bad requests. Each gets its exact status and challenge (error
// code, resource_metadata, scope where one is due) and counts exactly one
// failure under its reason, and nothing else; a request net/http itself
// refuses (431) counts nothing. A session survives a refreshed token of
// its principal, and refuses another principal's (404).
func TestAuthBadTokens(t *testing.T) {
	other := oidcClient{"vigil-other-client", "vigil-other-client-secret"}
	port := authResource(t)
	resource := port.resource
	as := startOIDCProvider(t, oidcOptions{Resource: resource, OtherClients: []oidcClient{other}})
	v := startVigilAuth(t, port, as.Issuer(), nil, "-auth-scopes", "vigil.read", "-auth-tool-scopes", "sleep=vigil.slow")
	metadataURL := strings.TrimSuffix(resource, "/mcp") + "/.well-known/oauth-protected-resource/mcp"

	key := as.Keys()[0]
	issuer := as.Issuer()
	valid := as.Token(t, "vigil.read")
	// A token made with the provider's key: claims changed by change.
	signed := func(change func(jwt.MapClaims)) string {
		c := accessClaims(issuer, resource, "vigil.read")
		change(c)
		return key.Sign(t, c)
	}
	now := time.Now()

	// alg none, and HS256 keyed with the provider's public key (the
	// algorithm-confusion attack), both with the provider's kid.
	none := jwt.NewWithClaims(jwt.SigningMethodNone, accessClaims(issuer, resource, "vigil.read"))
	none.Header["kid"] = key.ID
	noneToken, err := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&key.Private.PublicKey)
	require.NoError(t, err)
	publicPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, accessClaims(issuer, resource, "vigil.read"))
	hs.Header["kid"] = key.ID
	hs.Header["typ"] = "at+jwt"
	hsToken, err := hs.SignedString(publicPEM)
	require.NoError(t, err)

	// The session of the table's session cases, opened by the test client.
	session := v.session(t, valid).session
	otherStatus, otherToken := as.TokenFor(t, other, resource, "vigil.read")
	require.Equal(t, http.StatusOK, otherStatus, "%+v", otherToken)
	require.NotEqual(t, oidcClientID, func() any { _, c := unverifiedJWT(t, otherToken.AccessToken); return c["sub"] }())

	type want struct {
		status int
		code   string // the challenge's error; "" none
		reason string // the failure counted; "" none
		scope  string // the challenge's scope, when not ""
	}
	bearer := func(tok string) []string { return []string{"Bearer " + tok} }
	cases := []struct {
		name  string
		probe authProbe
		want  want
	}{
		{"no Authorization", authProbe{}, want{401, "", "missing_token", "vigil.read"}},
		{"another scheme (Basic)", authProbe{auth: []string{"Basic dmlnaWw6c2VjcmV0"}}, want{401, "", "missing_token", "vigil.read"}},
		{"empty Bearer", authProbe{auth: []string{"Bearer "}}, want{401, "invalid_token", "invalid_token", ""}},
		{"not a JWT", authProbe{auth: bearer("not-a-jwt")}, want{401, "invalid_token", "invalid_token", ""}},
		{"malformed header (a space in the token)", authProbe{auth: []string{"Bearer a b"}}, want{401, "invalid_token", "invalid_token", ""}},
		{"alg none", authProbe{auth: bearer(noneToken)}, want{401, "invalid_token", "invalid_token", ""}},
		{"HS256 keyed with the provider's public key", authProbe{auth: bearer(hsToken)}, want{401, "invalid_token", "invalid_token", ""}},
		{"expired", authProbe{auth: bearer(signed(func(c jwt.MapClaims) {
			c["iat"], c["exp"] = now.Add(-20*time.Minute).Unix(), now.Add(-10*time.Minute).Unix()
		}))}, want{401, "invalid_token", "expired", ""}},
		{"nbf in the future", authProbe{auth: bearer(signed(func(c jwt.MapClaims) {
			c["nbf"] = now.Add(10 * time.Minute).Unix()
		}))}, want{401, "invalid_token", "expired", ""}},
		{"wrong issuer", authProbe{auth: bearer(signed(func(c jwt.MapClaims) {
			c["iss"] = "http://127.0.0.1:1"
		}))}, want{401, "invalid_token", "wrong_issuer", ""}},
		{"audience of another resource", authProbe{auth: bearer(signed(func(c jwt.MapClaims) {
			c["aud"] = "http://127.0.0.1:1/mcp"
		}))}, want{401, "invalid_token", "wrong_audience", ""}},
		{
			"no audience",
			authProbe{auth: bearer(signed(func(c jwt.MapClaims) { delete(c, "aud") }))},
			want{401, "invalid_token", "wrong_audience", ""},
		},
		{
			"unknown kid",
			authProbe{auth: bearer(newOIDCKey(t, "never-published").Sign(t, accessClaims(issuer, resource, "vigil.read")))},
			want{401, "invalid_token", "unknown_key", ""},
		},
		{
			"tampered payload (another sub)",
			authProbe{auth: bearer(tamperedSubject(t, as.Token(t, "vigil.read"), "someone-else"))},
			want{401, "invalid_token", "invalid_token", ""},
		},
		{
			"token in the query string",
			authProbe{query: "access_token=" + url.QueryEscape(valid)},
			want{400, "invalid_request", "invalid_token", ""},
		},
		{
			"token in the query string and the header",
			authProbe{query: "access_token=" + url.QueryEscape(valid), auth: bearer(valid)},
			want{400, "invalid_request", "invalid_token", ""},
		},
		{
			"two Authorization headers",
			authProbe{auth: []string{"Bearer " + valid, "Bearer " + valid}},
			want{400, "invalid_request", "invalid_token", ""},
		},
		{
			"oversized Authorization (over 8 KiB)",
			authProbe{auth: bearer(strings.Repeat("a", 8<<10+1))},
			want{401, "invalid_token", "invalid_token", ""},
		},
		{
			"another subject's token on a session",
			authProbe{auth: bearer(otherToken.AccessToken), session: session, body: matrixCall("echo", `{"text":"x"}`)},
			want{404, "", "session_principal_mismatch", ""},
		},
		{
			"another subject's token on a session's GET stream",
			authProbe{method: http.MethodGet, auth: bearer(otherToken.AccessToken), session: session},
			want{404, "", "session_principal_mismatch", ""},
		},
		{
			"another subject's token deleting a session",
			authProbe{method: http.MethodDelete, auth: bearer(otherToken.AccessToken), session: session},
			want{404, "", "session_principal_mismatch", ""},
		},
		{
			"sleep without vigil.slow",
			authProbe{auth: bearer(valid), session: session, body: matrixCall("sleep", `{"ms":1}`)},
			want{403, "insufficient_scope", "insufficient_scope", "vigil.read vigil.slow"},
		},
		// The guard must read a body as the server does (member names
		// matched exactly, the last of a repeated one winning), or a
		// member the server ignores could hide the tool it calls.
		{
			"sleep behind a case-variant name member",
			authProbe{
				auth: bearer(valid), session: session,
				body: `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sleep","NAME":"echo","arguments":{"ms":1}}}`,
			},
			want{403, "insufficient_scope", "insufficient_scope", "vigil.read vigil.slow"},
		},
		{
			"sleep behind a case-variant method member",
			authProbe{
				auth: bearer(valid), session: session,
				body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","Method":"ping","params":{"name":"sleep","arguments":{"ms":1}}}`,
			},
			want{403, "insufficient_scope", "insufficient_scope", "vigil.read vigil.slow"},
		},
		{
			"sleep behind a repeated name member",
			authProbe{
				auth: bearer(valid), session: session,
				body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","name":"sleep","arguments":{"ms":1}}}`,
			},
			want{403, "insufficient_scope", "insufficient_scope", "vigil.read vigil.slow"},
		},
		{
			"sleep in a batch",
			authProbe{
				auth: bearer(valid), session: session,
				body: `[{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}},` +
					`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1}}}]`,
			},
			want{403, "insufficient_scope", "insufficient_scope", "vigil.read vigil.slow"},
		},
		{
			"a token without vigil.read",
			authProbe{auth: bearer(as.Token(t, "vigil.slow"))},
			want{403, "insufficient_scope", "insufficient_scope", "vigil.read"},
		},
		{
			"a token without any scope (sleep)",
			authProbe{auth: bearer(as.Token(t)), session: session, body: matrixCall("sleep", `{"ms":1}`)},
			want{403, "insufficient_scope", "insufficient_scope", "vigil.read vigil.slow"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := v.authFailures(t)
			a := v.probe(t, tc.probe)
			after := v.authFailures(t)
			t.Logf("HTTP %d, WWW-Authenticate: %.200s", a.status, a.challenge)
			require.Equal(t, tc.want.status, a.status, "body %.300s", a.body)
			requireCounted(t, before, after, tc.want.reason)
			if tc.want.status == http.StatusNotFound {
				assert.Empty(t, a.challenge, "a session of another principal is an unknown session, not a challenge")
				return
			}
			require.NotEmpty(t, a.challenge, "a %d carries a challenge", a.status)
			if tc.want.code == "" {
				assert.NotContains(t, a.params, "error", "no error code without a bearer token (RFC 6750 §3.1)")
			} else {
				assert.Equal(t, tc.want.code, a.params["error"])
			}
			assert.Equal(t, metadataURL, a.params["resource_metadata"])
			if tc.want.scope != "" {
				assert.ElementsMatch(t, strings.Fields(tc.want.scope), strings.Fields(a.params["scope"]), "scope")
			} else if tc.want.status == http.StatusUnauthorized || tc.want.status == http.StatusBadRequest {
				assert.NotContains(t, a.params, "scope", "an invalid token's challenge needs no scope")
			}
			for _, leak := range []string{valid, otherToken.AccessToken} {
				assert.NotContains(t, a.challenge+a.body, leak, "the answer never echoes a token")
			}
		})
	}

	t.Run("headers over net/http's limit: 431, not counted", func(t *testing.T) {
		// net/http refuses headers over MaxHeaderBytes (vigil keeps the
		// default, 1 MiB) before any handler runs: 431, no challenge, no
		// auth failure counted. Between 8 KiB and 1 MiB the guard answers
		// (the oversized case above, 401 invalid_token).
		before := v.authFailures(t)
		require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, headerTooLarge(t, strings.TrimPrefix(strings.TrimSuffix(v.url, "/mcp"), "http://")))
		requireCounted(t, before, v.authFailures(t), "")
	})

	// (The session survived the other subject's DELETE: it is used below.)
	t.Run("a refreshed token continues the session, an expired one is refused", func(t *testing.T) {
		before := v.authFailures(t)
		refreshed := as.Token(t, "vigil.read")
		require.NotEqual(t, valid, refreshed)
		a := v.probe(t, authProbe{auth: bearer(refreshed), session: session, body: matrixCall("echo", `{"text":"refreshed"}`)})
		require.Equal(t, http.StatusOK, a.status, "%.300s", a.body)
		assert.Contains(t, a.body, "refreshed")
		requireCounted(t, before, v.authFailures(t), "")

		expired := signed(func(c jwt.MapClaims) {
			c["iat"], c["exp"] = now.Add(-20*time.Minute).Unix(), now.Add(-10*time.Minute).Unix()
		})
		a = v.probe(t, authProbe{auth: bearer(expired), session: session, body: matrixCall("echo", `{"text":"late"}`)})
		require.Equal(t, http.StatusUnauthorized, a.status, "%.300s", a.body)
		assert.Equal(t, "invalid_token", a.params["error"])
		assert.Equal(t, metadataURL, a.params["resource_metadata"])
		after := v.authFailures(t)
		requireCounted(t, before, after, "expired")

		// The session still answers its principal.
		a = v.probe(t, authProbe{auth: bearer(valid), session: session, body: matrixCall("echo", `{"text":"still"}`)})
		require.Equal(t, http.StatusOK, a.status, "%.300s", a.body)
		requireCounted(t, after, v.authFailures(t), "")
	})

	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// burstSize is the number of concurrent requests of one new token in
// TestAuthIntrospectionBurst.
const burstSize = 1000

// TestAuthIntrospectionBurst: vigil introspecting the provider's opaque
// tokens. A burst of burstSize concurrent stateless tools/call requests
// with one token it has never seen, released together, costs the provider
// exactly one introspection (counted by the provider). A revoked token
// (inactive) and a token for another resource (an active answer with
// another aud) are refused 401. With the provider stopped, a token vigil
// has not seen is answered 503 with Retry-After (verifier_error, not 401),
// while a token it has verified still works.
func TestAuthIntrospectionBurst(t *testing.T) {
	introspector := oidcClient{"vigil-resource-server", "vigil-introspection-secret"}
	client := oidcClient{oidcClientID, oidcClientSecret}
	const otherResource = "http://127.0.0.1:1/other-mcp"
	port := authResource(t)
	resource := port.resource
	as := startOIDCProvider(t, oidcOptions{
		Resource: resource, Opaque: true, Introspector: &introspector,
		OtherResources: []string{otherResource}, TestEndpoints: true,
	})
	v := startVigilAuth(t, port, as.Issuer(), []string{
		"VIGIL_AUTH_INTROSPECTION_CLIENT_ID=" + introspector.ID,
		"VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET=" + introspector.Secret,
	}, "-auth-scopes", "vigil.read")
	require.Zero(t, as.Introspections(t), "nothing introspected before the first request")

	token := as.Token(t, "vigil.read")
	statuses, bodies := statelessBurst(t, v.url, token, burstSize)
	for i, s := range statuses {
		require.Equal(t, http.StatusOK, s, "request %d of the burst: %.300s", i, bodies[i])
		require.Contains(t, bodies[i], `"text":"burst"`, "request %d of the burst", i)
	}
	require.Equal(t, 1, as.Introspections(t), "%d concurrent requests of one new token: one introspection", burstSize)

	// Inactive: revoked before vigil saw it.
	revoked := as.Token(t, "vigil.read")
	as.Revoke(t, client, revoked)
	_, answer := as.Introspect(t, introspector, revoked)
	require.Equal(t, map[string]any{"active": false}, answer, "the provider says a revoked token is inactive")
	n := as.Introspections(t)
	before := v.authFailures(t)
	a := v.probe(t, authProbe{auth: []string{"Bearer " + revoked}})
	require.Equal(t, http.StatusUnauthorized, a.status, "%.300s", a.body)
	assert.Equal(t, "invalid_token", a.params["error"])
	assert.NotEmpty(t, a.params["resource_metadata"])
	requireCounted(t, before, v.authFailures(t), "invalid_token")
	require.Equal(t, n+1, as.Introspections(t), "the revoked token was introspected once")

	// Active, but for another resource.
	status, tr := as.TokenFor(t, client, otherResource, "vigil.read")
	require.Equal(t, http.StatusOK, status, "%+v", tr)
	_, answer = as.Introspect(t, introspector, tr.AccessToken)
	require.Equal(t, true, answer["active"])
	require.Equal(t, otherResource, answer["aud"])
	before = v.authFailures(t)
	a = v.probe(t, authProbe{auth: []string{"Bearer " + tr.AccessToken}})
	require.Equal(t, http.StatusUnauthorized, a.status, "%.300s", a.body)
	assert.Equal(t, "invalid_token", a.params["error"])
	requireCounted(t, before, v.authFailures(t), "wrong_audience")

	// A JWT, which oidc-provider refuses to introspect (400
	// unsupported_token_type): the token is at fault, not the provider.
	jwtToken := newOIDCKey(t, "k").Sign(t, accessClaims(as.Issuer(), resource, "vigil.read"))
	n = as.Introspections(t)
	before = v.authFailures(t)
	a = v.probe(t, authProbe{auth: []string{"Bearer " + jwtToken}})
	require.Equal(t, http.StatusUnauthorized, a.status, "a token the provider cannot introspect: %.300s", a.body)
	assert.Equal(t, "invalid_token", a.params["error"])
	requireCounted(t, before, v.authFailures(t), "invalid_token")
	require.Equal(t, n+1, as.Introspections(t))
	// Remembered as refused: asking again costs the provider nothing.
	a = v.probe(t, authProbe{auth: []string{"Bearer " + jwtToken}})
	require.Equal(t, http.StatusUnauthorized, a.status)
	require.Equal(t, n+1, as.Introspections(t), "a refused token is cached")

	// The provider goes down.
	unseen := as.Token(t, "vigil.read")
	as.Stop(t)
	before = v.authFailures(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, v.url, strings.NewReader(matrixInitialize))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+unseen)
	resp, err := v.hc.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "a new token while the provider is down: %s", body)
	assert.Equal(t, "5", resp.Header.Get("Retry-After"))
	assert.Empty(t, resp.Header.Get("WWW-Authenticate"), "503 is not a challenge: the token may be fine")
	requireCounted(t, before, v.authFailures(t), "verifier_error")

	// A token vigil has verified is still served from its cache; a refused
	// one is still refused.
	before = v.authFailures(t)
	statuses, bodies = statelessBurst(t, v.url, token, 1)
	require.Equal(t, http.StatusOK, statuses[0], "a cached token while the provider is down: %.300s", bodies[0])
	requireCounted(t, before, v.authFailures(t), "")
	a = v.probe(t, authProbe{auth: []string{"Bearer " + revoked}})
	require.Equal(t, http.StatusUnauthorized, a.status, "a refused token stays refused while the provider is down")
	requireCounted(t, before, v.authFailures(t), "invalid_token")

	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// statelessBurst sends n 2026-07-28 stateless tools/call echo requests
// with token to mcpURL at once: each on its own connection, its request
// built, released together by one barrier. It returns each status and
// body.
func statelessBurst(t *testing.T, mcpURL, token string, n int) ([]int, []string) {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	const meta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"vigil-auth-burst","version":"1"}}`
	statuses, bodies := make([]int, n), make([]string, n)
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	for i := range n {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"burst"},"_meta":%s}}`, i+1, meta)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, mcpURL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "echo")
		req.Header.Set("Authorization", "Bearer "+token)
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-release
			resp, err := hc.Do(req)
			if err != nil {
				bodies[i] = err.Error()
				return
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
			statuses[i], bodies[i] = resp.StatusCode, string(b)
		}()
	}
	ready.Wait()
	close(release)
	done.Wait()
	return statuses, bodies
}
