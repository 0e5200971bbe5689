package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/middleware/oauth"
)

// authExprsWindow is the value of $__rate_interval in
// TestE2EAuthFailuresDashboard: the 5m of the alerts' windows, so that the
// panel's rates and the alert's use the same samples. The test ends well
// within 5 minutes of Prometheus's first scrape, so every window holds the
// whole history: the first sample (every reason at 0, created at zero)
// through the last.
const authExprsWindow = "5m"

// TestE2EAuthFailuresDashboard runs vigil with -auth-issuer against the real
// authorization server (oidc_provider_test.go), scraped every second by a
// real Prometheus that evaluates dashboards/rules.yml, makes requests
// refused for known reasons, and checks through Prometheus's HTTP API:
//
//   - mcp_server_auth_failures_total, summed by reason, is exactly the
//     ground truth the client kept (every reason present, the others 0);
//   - the expression of the dashboard's "Auth failures by reason" panel
//     (with $__rate_interval = 5m) gives each reason a rate proportional
//     to its count: every series of one target shares its scrape times and
//     starts at 0, so Prometheus extrapolates them all by the same factor;
//     reasons without failures are 0;
//   - the alerts that read the counter (VigilAuthFailuresSurge,
//     VigilAuthVerifierErrors) evaluate with health ok, each operand returns
//     series, the refused-token rate operand of the surge alert is the
//     panel's rate summed over its reasons, and neither alert is pending
//     (a dozen refusals is no surge, and no verifier error happened);
//   - vigil's /metrics exposes the counter.
func TestE2EAuthFailuresDashboard(t *testing.T) {
	testkit.External(t, "prometheus")
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		msg := "prometheus is not on PATH; run `bash cmd/vigil/testdata/e2e/install-prometheus.sh` (apt-get install prometheus)"
		missingComponent(t, msg)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	api := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer api.CloseIdleConnections()

	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	rulesFile := filepath.Join(root, "dashboards", "rules.yml")
	dashboard := loadE2EDashboard(t, filepath.Join(root, "dashboards", "vigil.json"))

	key, stray := newOIDCKey(t, "key-1"), newOIDCKey(t, "never-published")
	port := authResource(t)
	as := startOIDCProvider(t, oidcOptions{Resource: port.resource, Keys: []*oidcKey{key}})
	v := startVigilAuth(t, port, as.Issuer(), nil, "-auth-tool-scopes", "sleep=vigil.slow", "-auth-dpop-nonces")
	u, err := url.Parse(v.url)
	require.NoError(t, err)
	metricsURL := "http://" + u.Host + "/metrics"
	prom := startPrometheus(t, promBin, u.Host, api, rulesFile)
	started := time.Now()

	truth := refuseForKnownReasons(t, v, as, key, stray)
	t.Logf("refused: %v", truth)

	// The counter, exactly.
	want := map[string]float64{}
	for _, r := range oauth.Reasons() {
		want[r.String()] = float64(truth[r.String()])
	}
	var got map[string]float64
	pollUntil(t, "prometheus scrapes the auth failures", 30*time.Second, prom.proc, func() error {
		got, err = prom.sumBy(ctx, "reason", mcpconv.MetricAuthFailures)
		if err != nil {
			return err
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("sum by (reason) (%s) = %v, want %v", mcpconv.MetricAuthFailures, got, want)
		}
		return nil
	})

	// The panel.
	var panelQuery string
	for _, e := range dashboard.exprs() {
		if namesAuthMetric(e.expr) {
			require.Empty(t, panelQuery, "one dashboard expression reads %s; %s is another", mcpconv.MetricAuthFailures, e.where)
			intervals := maps.Clone(exprsGrafanaIntervals)
			intervals["__rate_interval"] = authExprsWindow
			panelQuery, err = e.queryWith(dashboard.variables, intervals)
			require.NoError(t, err, e.where)
			require.Contains(t, e.where, "Auth failures by reason")
		}
	}
	require.NotEmpty(t, panelQuery, "no dashboard panel reads %s", mcpconv.MetricAuthFailures)
	// The panel and the alert's operands are evaluated at one instant: the
	// extrapolation factor changes with every scrape.
	at := time.Now()
	res, err := queryAt(ctx, prom, panelQuery, at)
	require.NoError(t, err, panelQuery)
	rates := map[string]float64{}
	for _, s := range res {
		rates[s.Metric["reason"]] = sampleValue(t, s)
	}
	require.ElementsMatch(t, slices.Collect(maps.Keys(want)), slices.Collect(maps.Keys(rates)), "the panel's series: one per reason")
	// The factor rate/count, the same for every reason with failures.
	factor := rates[oauth.ReasonMissingToken.String()] / want[oauth.ReasonMissingToken.String()]
	require.Positive(t, factor, "%s: %v", panelQuery, rates)
	// A per-second rate over 5m of a history shorter than 5m: the count
	// over 300 s, extrapolated by at most a scrape interval past the last
	// sample (none before the first: it is 0).
	assert.True(t, factor >= 1.0/300 && factor <= 2.2/300, "%s: %v/s per failure is no rate over 5m", panelQuery, factor)
	for reason, n := range want {
		if n == 0 {
			assert.Zero(t, rates[reason], "panel rate of %s, which had no failure", reason)
			continue
		}
		assert.InEpsilon(t, n*factor, rates[reason], 1e-9,
			"panel rate of %s: %v, want %v failures x %v (the rates %v)", reason, rates[reason], n, factor, rates)
	}
	t.Logf("panel %s: %v (%.6g/s per failure)", panelQuery, rates, factor)

	// The alerts.
	rules, err := prom.rules(ctx)
	require.NoError(t, err)
	requireAllRulesLoaded(t, rulesFile, rules)
	var checks []exprCheck
	var surge []string
	for _, r := range rules {
		if r.Type != "alerting" || !namesAuthMetric(r.Query) {
			continue
		}
		checks = append(checks, exprCheck{where: "alert " + r.Name, query: r.Query})
		ops := alertOperands(r.Query)
		for i, op := range ops {
			checks = append(checks, exprCheck{where: fmt.Sprintf("alert %s operand %d", r.Name, i+1), query: op, series: true})
		}
		if r.Name == "VigilAuthFailuresSurge" {
			surge = ops
		}
	}
	require.Len(t, checks, 3+2+2, "VigilAuthFailuresSurge (2 operands), VigilAuthVerifierErrors (1) and VigilAuthIntrospectionThrottled (1)")
	waitExprs(ctx, t, prom, checks, 30*time.Second)
	require.Len(t, surge, 2)
	var refusedTokens float64
	for reason, n := range want {
		if reason != oauth.ReasonMissingToken.String() && reason != oauth.ReasonUseDPoPNonce.String() &&
			reason != oauth.ReasonVerifierError.String() && reason != oauth.ReasonVerifierBusy.String() {
			refusedTokens += n
		}
	}
	require.Positive(t, refusedTokens)
	res, err = queryAt(ctx, prom, surge[1], at)
	require.NoError(t, err, surge[1])
	require.Len(t, res, 1, surge[1])
	rate := sampleValue(t, res[0])
	assert.InEpsilon(t, refusedTokens*factor, rate, 1e-9, "%s: %v refused tokens", surge[1], refusedTokens)
	ratio, err := prom.scalar(ctx, surge[0])
	require.NoError(t, err, surge[0])
	assert.True(t, ratio > 0 && ratio <= 1, "refused-token ratio %v", ratio)
	firing, err := prom.query(ctx, `ALERTS{alertname=~"VigilAuth.*"}`)
	require.NoError(t, err)
	assert.Empty(t, firing, "no authorization alert is pending or firing")
	t.Logf("alerts checked %v after the first scrape: refused-token rate %.4g/s, ratio %.3g", time.Since(started).Round(time.Millisecond), rate, ratio)

	assert.Contains(t, exposedFamilies(ctx, t, api, metricsURL), mcpconv.MetricAuthFailures)
	require.NoError(t, v.proc.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// refuseForKnownReasons makes requests vigil must refuse, each for a known
// reason, checks each answer's status, and returns the count by reason.
func refuseForKnownReasons(t *testing.T, v *vigilAuth, as *oidcProvider, key, stray *oidcKey) map[string]int {
	t.Helper()
	truth := map[string]int{}
	iss, resource := as.Issuer(), v.resource
	refused := func(reason string, status int, token string) {
		t.Helper()
		a := v.initialize(t, token)
		require.Equal(t, status, a.status, "%s: answer %+v", reason, a)
		truth[reason]++
	}
	signed := func(edit func(c map[string]any)) string {
		c := accessClaims(iss, resource, "vigil.read")
		edit(c)
		return key.Sign(t, c)
	}
	for range 3 {
		refused("missing_token", http.StatusUnauthorized, "")
	}
	for range 2 {
		refused("invalid_token", http.StatusUnauthorized, "not-a-jwt")
	}
	for range 2 {
		refused("wrong_audience", http.StatusUnauthorized, signed(func(c map[string]any) { c["aud"] = "http://127.0.0.1:1/mcp" }))
	}
	refused("expired", http.StatusUnauthorized, signed(func(c map[string]any) {
		c["iat"] = time.Now().Add(-time.Hour).Unix()
		c["exp"] = time.Now().Add(-30 * time.Minute).Unix()
	}))
	refused("wrong_issuer", http.StatusUnauthorized, signed(func(c map[string]any) { c["iss"] = "http://127.0.0.1:1" }))
	refused("unknown_key", http.StatusUnauthorized, stray.Sign(t, accessClaims(iss, resource, "vigil.read")))

	// DPoP: a token under the DPoP scheme without a proof, then with a
	// proof that lacks the server's nonce (-auth-dpop-nonces).
	dpopRefused := func(reason string, proof bool) {
		t.Helper()
		token := as.Token(t, "vigil.read")
		hdr := http.Header{"Authorization": {"DPoP " + token}}
		if proof {
			hdr.Set("DPoP", newDPoPKey(t).proof(t, http.MethodPost, v.url, token, ""))
		}
		status, challenges := postDPoP(t, v.url, hdr)
		require.Equal(t, http.StatusUnauthorized, status, reason)
		require.Contains(t, challenges, `DPoP error="`+reason+`"`)
		truth[reason]++
	}
	dpopRefused("invalid_dpop_proof", false)
	dpopRefused("use_dpop_nonce", true)

	// A session of the provider's own token: sleep needs vigil.slow.
	c := v.session(t, as.Token(t, "vigil.read"))
	for range 2 {
		_, msg := c.request("tools/call", toolParams("sleep", map[string]any{"ms": 1}, "", ""))
		resp, err := c.post(t.Context(), msg)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "sleep without vigil.slow")
		truth["insufficient_scope"]++
	}
	// Another principal presents that session's id.
	other := signed(func(c map[string]any) { c["sub"] = "someone-else" })
	o := newE2EClient(v.url, &http.Client{Transport: bearer{token: other, base: v.hc.Transport}, Timeout: 10 * time.Second})
	o.session = c.session
	_, msg := o.request("tools/list", map[string]any{})
	resp, err := o.post(t.Context(), msg)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a session id of another principal")
	truth["session_principal_mismatch"]++
	require.NoError(t, c.deleteSession(t.Context()))

	for reason := range truth {
		require.True(t, slices.ContainsFunc(oauth.Reasons(), func(r oauth.Reason) bool { return r.String() == reason }), "%s is a reason", reason)
	}
	require.NotContains(t, truth, "verifier_error")
	require.NotContains(t, truth, "verifier_busy")
	require.Len(t, truth, len(oauth.Reasons())-2, "every reason but verifier_error and verifier_busy (introspection only)")
	return truth
}

// sampleValue returns the value of an instant vector's sample.
func sampleValue(t *testing.T, s promSample) float64 {
	t.Helper()
	var f float64
	_, err := fmt.Sscan(strings.TrimSpace(fmt.Sprint(s.Value[1])), &f)
	require.NoError(t, err, "sample %v", s)
	require.False(t, math.IsNaN(f), "sample %v", s)
	return f
}

// queryAt evaluates an instant query at ts and returns its vector.
func queryAt(ctx context.Context, p *prometheusPeer, q string, ts time.Time) ([]promSample, error) {
	var data struct {
		ResultType string       `json:"resultType"`
		Result     []promSample `json:"result"`
	}
	params := url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(ts.UnixMilli())/1000, 'f', 3, 64)}}
	if err := p.apiGet(ctx, "/api/v1/query", params, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: result type %s", q, data.ResultType)
	}
	return data.Result, nil
}
