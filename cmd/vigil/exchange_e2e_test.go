package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// The token exchange (RFC 8693) of the real authorization server: vigil's
// -auth-exchange-* credentials, and a downstream service's resource.
var (
	exchanger  = oidcClient{ID: "vigil-exchanger", Secret: "vigil-exchanger-secret"}
	downstream = "http://127.0.0.1:9/downstream"
)

// Exchanges returns how many tokens the provider issued by token exchange
// in its current run (TestEndpoints, Exchanger).
func (p *oidcProvider) Exchanges(t *testing.T) int {
	t.Helper()
	var n struct {
		Count *int `json:"count"`
	}
	require.NoError(t, getJSON(t.Context(), p.hc, p.issuer+"/test/exchanges", &n))
	require.NotNil(t, n.Count, "GET /test/exchanges: no count")
	return *n.Count
}

// Seen returns the method and path of each request the provider received
// in its current run whose URL, headers or body held token (TestEndpoints,
// Exchanger).
func (p *oidcProvider) Seen(t *testing.T, token string) []string {
	t.Helper()
	body, err := json.Marshal(map[string]string{"token": token})
	require.NoError(t, err)
	resp, err := p.hc.Post(p.issuer+"/test/seen", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var seen struct {
		Requests []string `json:"requests"`
	}
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&seen))
	return seen.Requests
}

// Exchange exchanges subject for a token of audience as the exchanger
// client, as vigil does, and returns it.
func (p *oidcProvider) Exchange(t *testing.T, subject, audience string) string {
	t.Helper()
	form := url.Values{
		"grant_type":         {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token":      {subject},
		"subject_token_type": {"urn:ietf:params:oauth:token-type:access_token"},
		"audience":           {audience},
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.issuer+"/token", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(exchanger.ID, exchanger.Secret)
	resp, err := p.hc.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "token exchange: %s", b)
	var tr oidcTokenResponse
	require.NoError(t, json.Unmarshal(b, &tr))
	require.NotEmpty(t, tr.AccessToken)
	return tr.AccessToken
}

// TestAuthTokenExchange: with -auth-exchange-endpoint, a tool
// (downstream_whoami, which needs vigil.slow here) gets a token for another service on behalf of its
// caller from the real authorization server (oidc-provider with an RFC 8693
// grant): the token names the caller as its subject and vigil as the
// actor (act), for the audience asked. A second call is answered from
// vigil's cache: the authorization server sees one exchange. The caller's
// token reached the authorization server once, at its token endpoint,
// and nowhere else there (not discovery, not the key set); both
// exchanges (exchanged, cached) are counted.
func TestAuthTokenExchange(t *testing.T) {
	port := authResource(t)
	as := startOIDCProvider(t, oidcOptions{Resource: port.resource, OtherResources: []string{downstream}, Exchanger: &exchanger, TestEndpoints: true})
	v := startVigilAuth(t, port, as.Issuer(), []string{"VIGIL_AUTH_EXCHANGE_CLIENT_SECRET=" + exchanger.Secret},
		"-auth-exchange-endpoint", as.Issuer()+"/token", "-auth-exchange-client-id", exchanger.ID, "-auth-tool-scopes", "downstream_whoami=vigil.slow")
	token := as.Token(t, "vigil.read", "vigil.slow")
	c := v.session(t, token)

	// The tool takes -auth-tool-scopes like the others.
	_, err := v.session(t, as.Token(t, "vigil.read")).callTool(t.Context(), "downstream_whoami", map[string]any{"audience": downstream}, "")
	require.ErrorContains(t, err, "403")

	var first string
	for i := range 2 {
		msg, err := c.callTool(t.Context(), "downstream_whoami", map[string]any{"audience": downstream, "scopes": []string{"vigil.read"}}, "")
		require.NoError(t, err)
		require.Nil(t, msg.Error)
		var res struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Subject  string   `json:"subject"`
				Actors   []string `json:"actors"`
				Audience string   `json:"audience"`
				Scope    string   `json:"scope"`
				Expiry   int64    `json:"exp"`
			} `json:"structuredContent"`
		}
		require.NoError(t, json.Unmarshal(msg.Result, &res), "%s", msg.Result)
		require.False(t, res.IsError, "%s", msg.Result)
		id := res.StructuredContent
		assert.Equal(t, oidcClientID, id.Subject, "on behalf of the caller")
		assert.Equal(t, []string{exchanger.ID}, id.Actors, "vigil acts")
		assert.Equal(t, downstream, id.Audience)
		assert.Equal(t, "vigil.read", id.Scope)
		assert.Greater(t, id.Expiry, time.Now().Unix())
		if i == 0 {
			first = string(msg.Result)
		} else {
			assert.Equal(t, first, string(msg.Result), "the same token, from the cache")
		}
	}
	assert.Equal(t, 1, as.Exchanges(t), "the authorization server saw one exchange")
	assert.Equal(t, []string{"POST /token"}, as.Seen(t, token), "the caller's token went to the token endpoint once, nowhere else")
	assert.NotContains(t, v.logs.String(), token)
	assert.NotContains(t, v.logs.String(), exchanger.Secret)

	mf := svcMetrics(t, v.hc, strings.TrimSuffix(v.url, "/mcp"))[mcpconv.MetricAuthExchanges]
	require.NotNil(t, mf, "/metrics has no %s", mcpconv.MetricAuthExchanges)
	counts := map[string]float64{}
	for _, m := range mf.GetMetric() {
		counts[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
	}
	assert.Equal(t, map[string]float64{"exchanged": 1, "cached": 1, "refused": 0, "error": 0, "no_subject_token": 0}, counts)

	// An audience the authorization server does not know: refused, and
	// the tool says why.
	msg, err := c.callTool(t.Context(), "downstream_whoami", map[string]any{"audience": "http://127.0.0.1:9/unknown"}, "")
	require.NoError(t, err)
	assert.Contains(t, string(msg.Result), "invalid_target")
	assert.Contains(t, string(msg.Result), `"isError":true`)
}

// TestAuthDelegationShown: a token the real authorization server issued
// by token exchange for vigil itself, naming a client (its subject) and
// the exchanger acting on its behalf (act), is shown as "actor on behalf
// of subject": on /debug/vigil (JSON and HTML), in the request's log line
// and in its audit record.
func TestAuthDelegationShown(t *testing.T) {
	port := authResource(t)
	as := startOIDCProvider(t, oidcOptions{Resource: port.resource, Exchanger: &exchanger, TestEndpoints: true})
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	v := startVigilAuth(t, port, as.Issuer(), nil, "-audit-log", audit)
	delegated := as.Exchange(t, as.Token(t, "vigil.read"), port.resource)
	c := v.session(t, delegated)
	msg, err := c.callTool(t.Context(), "echo", map[string]any{"text": "hi"}, "")
	require.NoError(t, err)
	require.Nil(t, msg.Error)

	base := strings.TrimSuffix(v.url, "/mcp")
	snap, err := svcDebug(v.hc, base)
	require.NoError(t, err)
	require.Len(t, snap.Sessions, 1)
	assert.Equal(t, principalView{Subject: oidcClientID, ClientID: exchanger.ID, Actor: exchanger.ID}, snap.Sessions[0].principalView)
	html := debugBody(t, v.hc, base+"/debug/vigil?refresh=0")
	assert.Contains(t, html, `<span class="mono">`+exchanger.ID+`</span> <span class="muted">on behalf of</span> <span class="mono">`+oidcClientID+`</span>`)

	svcEventually(t, "the echo's audit record", 10*time.Second, func() (bool, error) {
		b, err := os.ReadFile(audit)
		return err == nil && bytes.Contains(b, []byte(`"tool":"echo"`)), nil
	})
	b, err := os.ReadFile(audit)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(b), &rec), "%s", b)
	assert.Equal(t, oidcClientID, rec["subject"])
	assert.Equal(t, []any{exchanger.ID}, rec["actors"])

	// A request's log line is written in a batch, off its way out.
	echoLine := func() string {
		lines := strings.Split(v.logs.String(), "\n")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "msg=request") && strings.Contains(l, "tool=echo") })
		if i < 0 {
			return ""
		}
		return lines[i]
	}
	svcEventually(t, "the echo's log line", 10*time.Second, func() (bool, error) { return echoLine() != "", nil })
	assert.Contains(t, echoLine(), "subject="+oidcClientID+" actor="+exchanger.ID+" ")
}
