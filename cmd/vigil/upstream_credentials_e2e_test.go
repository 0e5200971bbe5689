package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/demotools"
)

// TestGatewayClientCredentials: -upstream-auth client_credentials gets the
// upstream's token from the token endpoint (the client secret read from a
// file, the upstream as the resource asked for), once while it is good,
// and every request to the upstream carries it and the -upstream-header;
// the secret is in no log.
func TestGatewayClientCredentials(t *testing.T) {
	const secret = "gw-secret-51d7"
	up := startRecordingUpstream(t)
	var issued atomic.Int64
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, pw, _ := r.BasicAuth()
		if r.ParseForm() != nil || id != "gw" || pw != secret || r.Form.Get("grant_type") != "client_credentials" ||
			r.Form.Get("resource") != up.url || r.Form.Get("scope") != "mcp:tools" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
			return
		}
		issued.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"upstream-token-3a","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(as.Close)
	file := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(file, []byte(secret+"\n"), 0o600))

	svc := startService(t, "-http", "127.0.0.1:0", "-upstream", "u="+up.url, "-upstream-header", "u=X-Tenant=blue",
		"-upstream-auth", "u=client_credentials,token_url="+as.URL+",client_id=gw,client_secret=@"+file+",scopes=mcp:tools,resource="+up.url)
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	require.NoError(t, c.notify("notifications/initialized"))
	for i := range 2 {
		m, err = c.rpc(string(rune('2'+i)), "tools/call", `{"name":"hello"}`)
		require.NoError(t, err)
		require.Nil(t, m.Error)
		assert.Contains(t, string(m.Result), "hello from upstream")
	}

	seen := up.requests()
	require.GreaterOrEqual(t, len(seen), 4, "initialize, initialized, two calls")
	for _, r := range seen {
		assert.Contains(t, r, "Authorization: Bearer upstream-token-3a\r\n")
		assert.Contains(t, r, "X-Tenant: blue\r\n")
	}
	assert.Equal(t, int64(1), issued.Load(), "the token is kept while it is good")
	assert.NotContains(t, svc.logs.String(), secret)
}

// TestGatewayTokenExchange: with -upstream-auth token_exchange, a caller's
// call reaches the upstream with the caller's token exchanged at the real
// authorization server for the upstream's audience (its subject the
// caller, vigil the actor), the caller's own upstream session opened with
// that token too (an upstream may bind sessions to their subject), and
// what vigil sends on no caller's behalf (the listing session's
// initialize) with vigil's own token (client credentials of the exchange
// client); the caller's token appears in no upstream request and reached
// the authorization server only at its token endpoint.
func TestGatewayTokenExchange(t *testing.T) {
	up := startRecordingUpstream(t)
	port := authResource(t)
	as := startOIDCProvider(t, oidcOptions{Resource: port.resource, OtherResources: []string{up.url}, Exchanger: &exchanger, TestEndpoints: true})
	v := startVigilAuth(t, port, as.Issuer(), []string{"VIGIL_AUTH_EXCHANGE_CLIENT_SECRET=" + exchanger.Secret},
		"-auth-exchange-endpoint", as.Issuer()+"/token", "-auth-exchange-client-id", exchanger.ID,
		"-upstream", "u="+up.url, "-upstream-auth", "u=token_exchange,audience="+up.url)
	token := as.Token(t, "vigil.read")
	c := v.session(t, token)
	msg, err := c.callTool(t.Context(), "hello", nil, "")
	require.NoError(t, err)
	require.Nil(t, msg.Error)
	assert.Contains(t, string(msg.Result), "hello from upstream")

	bearerOf := func(r string) demotools.Identity {
		for line := range strings.SplitSeq(r, "\r\n") {
			if tok, ok := strings.CutPrefix(line, "Authorization: Bearer "); ok {
				return demotools.ClaimsOf(tok)
			}
		}
		t.Fatalf("no bearer token in\n%s", r)
		return demotools.Identity{}
	}
	var calls int
	var initializes []string // their subjects
	for _, r := range up.requests() {
		assert.NotContains(t, r, token, "the caller's token reached the upstream")
		id := bearerOf(r)
		assert.Equal(t, up.url, id.Audience)
		switch {
		case strings.Contains(r, `"method":"tools/call"`):
			calls++
			assert.Equal(t, oidcClientID, id.Subject, "on behalf of the caller")
			assert.Equal(t, []string{exchanger.ID}, id.Actors, "vigil acts")
		case strings.Contains(r, `"method":"initialize"`):
			initializes = append(initializes, id.Subject)
			if id.Subject == exchanger.ID {
				assert.Empty(t, id.Actors, "vigil's own")
			} else {
				assert.Equal(t, []string{exchanger.ID}, id.Actors, "the caller's session: vigil acts")
			}
		}
	}
	assert.Equal(t, 1, calls)
	// The listing session and the tool views (the baseline and one
	// without each capability the caller, which declares none, lacks:
	// roots, sampling, elicitation, MCP Apps; sessions of the gateway's,
	// shared by callers) are vigil's own; the caller's session is the
	// caller's.
	own := slices.Repeat([]string{exchanger.ID}, 1+1+4)
	assert.ElementsMatch(t, append(own, oidcClientID), initializes, "the listing session's, five tool views', then the caller's")
	assert.Equal(t, []string{"POST /token"}, as.Seen(t, token), "the caller's token went to the token endpoint, nowhere else")
	assert.NotContains(t, v.logs.String(), token)
}
