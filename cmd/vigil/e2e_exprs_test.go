package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

// exprsRequestTimeout is vigil's -request-timeout in
// TestE2EDashboardAndRuleExpressions: short, so that the test times calls
// out cheaply (a call answered -32001 is a server error, which the error
// ratios of the dashboard and the rules count: with none they return no
// series), long enough that runLoad's calls never reach it (its interrupted
// calls are interrupted within milliseconds).
const (
	exprsRequestTimeout = 3 * time.Second
	exprsTimedOut       = 3 // calls timed out
)

// exprsGrafanaIntervals are the values of Grafana's interval variables in
// the queries of TestE2EDashboardAndRuleExpressions.
var exprsGrafanaIntervals = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "15s",
	"__range":         "5m",
}

// TestE2EDashboardAndRuleExpressions runs vigil under load next to a real
// Prometheus that scrapes it every second and evaluates dashboards/rules.yml
// every second, and proves through Prometheus's HTTP API that every
// expression of the Grafana dashboard and of the rules runs, and returns
// series when it is meant to:
//
//   - every panel target and annotation query of dashboards/vigil.json,
//     with Grafana's interval variables set (exprsGrafanaIntervals) and each
//     dashboard variable set to its "All" value (allowed only inside regex
//     matchers, where "All" means any value): at least one series;
//   - every recording rule: its expression, and the series it records, at
//     least one series; every rule evaluates with health "ok";
//   - every alerting rule: its expression runs (it returns series only while
//     the alert is pending or firing). An expression A and B fires only if
//     both A and B return series, so it is split at its top-level "and"s,
//     and from each operand a top-level comparison with its threshold is
//     removed (A > B is evaluated as A): each operand must return at least
//     one series. For VigilTargetDown (up{job="vigil"} == 0) that is the up
//     series of the scraped vigil.
//
// Then every metric name written in dashboards/ and deploy/ (outside Go test
// sources, which name wrong metrics on purpose) must be a metric family of
// vigil's /metrics, or one of the series of a histogram family, and every
// recording rule name written there must be a rule Prometheus loaded.
//
// The load is runLoad's (answered calls, an unknown tool, cancelled and
// abandoned calls, DELETEs) and runErrorsLoad's (a tool result with
// isError, calls timed out).
//
// vigil runs without authorization here: what reads
// mcp_server_auth_failures_total only has to run, and its metric name is
// not looked for in /metrics; TestE2EAuthFailuresDashboard checks those
// against a vigil with -auth-issuer.
func TestE2EDashboardAndRuleExpressions(t *testing.T) {
	tools := requireE2ETools(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	api := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer api.CloseIdleConnections()
	mcp := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer mcp.CloseIdleConnections()

	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	rulesFile := filepath.Join(root, "dashboards", "rules.yml")
	dashboard := loadE2EDashboard(t, filepath.Join(root, "dashboards", "vigil.json"))

	// Jaeger only receives vigil's spans here: vigil runs as in
	// TestE2EPrometheusAndJaeger.
	jaeger := startJaeger(t, tools.jaeger, api)
	vigil, mcpURL := startVigilE2E(ctx, t, jaeger.otlpHTTP, "-request-timeout", exprsRequestTimeout.String())
	u, err := url.Parse(mcpURL)
	require.NoError(t, err)
	metricsURL := "http://" + u.Host + "/metrics"
	prom := startPrometheus(t, tools.prometheus, u.Host, api, rulesFile)

	loadStart := time.Now()
	truth := &groundTruth{}
	runLoad(ctx, t, mcpURL, metricsURL, mcp, api, truth)
	runErrorsLoad(ctx, t, mcpURL, mcp, truth)
	t.Logf("load: %v requests in %d sessions in %v; outcomes %v, causes %v, drops %v",
		truth.total(), truth.sessions, time.Since(loadStart).Round(time.Millisecond), truth.outcomes, truth.causes, truth.drops)

	rules, err := prom.rules(ctx)
	require.NoError(t, err)
	requireAllRulesLoaded(t, rulesFile, rules)

	// This vigil runs without -auth-issuer, so it has no
	// mcp_server_auth_failures_total: expressions over it must run here, and
	// TestE2EAuthFailuresDashboard checks their series and values against a
	// vigil with authorization. Nor does it run with -redis: expressions over
	// the shared mode's metrics must run here (dashboards/rules_test.yml
	// checks the alerts' values), and TestChaosSharedReplicas checks that
	// vigil -redis exposes each of their names.
	var checks []exprCheck
	for _, e := range dashboard.exprs() {
		q, err := e.query(dashboard.variables)
		require.NoError(t, err, e.where)
		checks = append(checks, exprCheck{where: e.where, query: q, series: !namesAuthMetric(q) && !namesSharedModeMetric(q) && !namesOptInAuthMetric(q)})
	}
	nDashboard := len(checks)
	for _, r := range rules {
		switch r.Type {
		case "recording":
			checks = append(checks,
				exprCheck{where: "recording rule " + r.Name, query: r.Query, series: true},
				exprCheck{where: "series recorded by " + r.Name, query: r.Name, series: true})
		case "alerting":
			checks = append(checks, exprCheck{where: "alert " + r.Name, query: r.Query})
			for i, op := range alertOperands(r.Query) {
				checks = append(checks, exprCheck{where: fmt.Sprintf("alert %s operand %d", r.Name, i+1), query: op, series: !namesAuthMetric(op) && !namesSharedModeMetric(op) && !namesOptInAuthMetric(op)})
			}
		default:
			t.Fatalf("rule %s of type %q", r.Name, r.Type)
		}
	}

	waitStart := time.Now()
	waitExprs(ctx, t, prom, checks, 60*time.Second)
	t.Logf("%d expressions (%d of the dashboard, %d of %d rules) checked, %v after the load",
		len(checks), nDashboard, len(checks)-nDashboard, len(rules), time.Since(waitStart).Round(time.Millisecond))

	t.Run("metric names", func(t *testing.T) {
		families := exposedFamilies(ctx, t, api, metricsURL)
		recorded := map[string]bool{}
		for _, r := range rules {
			if r.Type == "recording" {
				recorded[r.Name] = true
			}
		}
		names := referencedMetricNames(t, filepath.Join(root, "dashboards"), filepath.Join(root, "deploy"))
		require.NotEmpty(t, names)
		for name, where := range names {
			if name == mcpconv.MetricAuthFailures {
				continue // exposed with -auth-issuer: TestE2EAuthFailuresDashboard
			}
			if sharedModeMetric(name) {
				continue // exposed with -redis: TestChaosSharedReplicas
			}
			if namesOptInAuthMetric(name) {
				continue // exposed with -auth-policy and -auth-exchange-*: TestAuthPolicy, TestAuthTokenExchange
			}
			if strings.Contains(name, ":") {
				assert.True(t, recorded[name], "%s (in %s) is not a recording rule of %s", name, where, rulesFile)
				continue
			}
			assert.True(t, families.exposes(name), "%s (in %s) is not a metric of vigil's /metrics", name, where)
		}
		t.Logf("%d metric and recording rule names checked", len(names))
	})

	require.NoError(t, vigil.stop(10*time.Second), "vigil must exit with status 0 after SIGTERM")
}

// runErrorsLoad makes, in one more session, a tools/call answered with a
// tool result with isError set (convert_temperature below absolute zero),
// and exprsTimedOut sleeps that outlast the request timeout, each of which
// must be answered -32001.
func runErrorsLoad(ctx context.Context, t *testing.T, mcpURL string, mcp *http.Client, truth *groundTruth) {
	t.Helper()
	s, err := openSession(ctx, mcpURL, mcp, truth)
	require.NoError(t, err)
	_, _, _, err = s.call(ctx, "convert_temperature", "convert_temperature",
		map[string]any{"value": -300, "from": "celsius", "to": "kelvin"}, isToolError)
	require.NoError(t, err)

	calls := make([]*pendingCall, exprsTimedOut)
	for i := range calls {
		calls[i] = s.c.startCall(ctx, "sleep", map[string]any{"ms": interruptSleepMS}, "")
	}
	// A bound in case vigil does not time a call out.
	const slack = 30 * time.Second
	timer := time.NewTimer(exprsRequestTimeout + slack)
	defer timer.Stop()
	var errs []error
	for _, c := range calls {
		var end callEnd
		select {
		case end = <-c.done:
		case <-timer.C:
			c.abort()
			end = <-c.done
			end.err = fmt.Errorf("not answered within %v of the request timeout (%w)", slack, end.err)
		}
		switch {
		case end.err != nil:
			errs = append(errs, fmt.Errorf("sleep call %d: %w", c.id, end.err))
		case end.msg == nil:
			errs = append(errs, fmt.Errorf("sleep call %d: no response", c.id))
		default:
			errs = append(errs, rpcError(-32001)(*end.msg))
			truth.record("tools/call", "sleep", "", mcpconv.OutcomeError, "", "")
		}
	}
	require.NoError(t, errors.Join(errs...), "calls that outlast the request timeout")
	require.NoError(t, s.c.deleteSession(ctx))
}

// namesAuthMetric reports whether a query reads the authorization failure
// counter, which only a vigil with -auth-issuer exposes.
func namesAuthMetric(q string) bool { return strings.Contains(q, mcpconv.MetricAuthFailures) }

// namesOptInAuthMetric reports whether a query reads a metric only a vigil
// with tool policies (-auth-policy) or token exchange (-auth-exchange-*)
// exposes: expressions over them must run here, and TestAuthPolicy and
// TestAuthTokenExchange check the counters' values.
func namesOptInAuthMetric(q string) bool {
	return strings.Contains(q, mcpconv.MetricPolicyDecisions) || strings.Contains(q, mcpconv.MetricAuthExchanges) || namesGatewayMetric(q)
}

// namesGatewayMetric reports whether a query reads a metric only a vigil
// with -upstream exposes: expressions over them must run here, and
// TestGatewayUpstreamToolsGuarded checks that vigil -upstream exposes each
// of their names.
func namesGatewayMetric(q string) bool {
	return strings.Contains(q, "mcp_gateway_") || strings.Contains(q, mcpconv.MetricUpstreamCallDuration)
}

// isToolError checks that a tools/call was answered with a result with
// isError set.
func isToolError(m rpcMessage) error {
	if m.Error != nil {
		return fmt.Errorf("error %d %s, want a tool result with isError", m.Error.Code, m.Error.Message)
	}
	var res struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		return err
	}
	if !res.IsError {
		return fmt.Errorf("result %s, want isError", m.Result)
	}
	return nil
}

// rpcError returns a check that a response is a JSON-RPC error with code.
func rpcError(code int64) func(rpcMessage) error {
	return func(m rpcMessage) error {
		if m.Error == nil {
			return fmt.Errorf("result %s, want error %d", m.Result, code)
		}
		if m.Error.Code != code {
			return fmt.Errorf("error %d %s, want error %d", m.Error.Code, m.Error.Message, code)
		}
		return nil
	}
}

// e2eDashboard is what the test reads of a Grafana dashboard.
type e2eDashboard struct {
	Panels      []e2ePanel `json:"panels"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			IncludeAll bool   `json:"includeAll"`
			AllValue   string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`

	// variables maps the variables that have an "All" value to it.
	variables map[string]string
}

type e2ePanel struct {
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []e2ePanel `json:"panels"` // of a collapsed row
}

func loadE2EDashboard(t *testing.T, path string) *e2eDashboard {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	d := &e2eDashboard{variables: map[string]string{}}
	require.NoError(t, json.Unmarshal(b, d), path)
	for _, v := range d.Templating.List {
		if v.IncludeAll && v.AllValue != "" {
			d.variables[v.Name] = v.AllValue
		}
	}
	return d
}

// dashboardExpr is one PromQL expression of the dashboard and where it is.
type dashboardExpr struct{ where, expr string }

// exprs returns the expressions of the panel targets (in collapsed rows
// too) and of the annotations.
func (d *e2eDashboard) exprs() []dashboardExpr {
	var out []dashboardExpr
	var walk func([]e2ePanel)
	walk = func(panels []e2ePanel) {
		for _, p := range panels {
			for _, tg := range p.Targets {
				if tg.Expr != "" {
					out = append(out, dashboardExpr{where: fmt.Sprintf("panel %q target %s", p.Title, tg.RefID), expr: tg.Expr})
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			out = append(out, dashboardExpr{where: fmt.Sprintf("annotation %q", a.Name), expr: a.Expr})
		}
	}
	return out
}

// grafanaVar matches $name, ${name}, ${name:format} and [[name]].
var grafanaVar = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[A-Za-z0-9_]+)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)\]\]`)

// query returns the expression as Grafana sends it to Prometheus: with the
// interval variables set to exprsGrafanaIntervals and the dashboard's
// variables to their "All" value. A variable with no such value, or one
// used outside the value of a regex matcher (=~ or !~, where "All"
// matches any value), is an error.
func (e dashboardExpr) query(vars map[string]string) (string, error) {
	return e.queryWith(vars, exprsGrafanaIntervals)
}

// queryWith is query with the interval variables set to intervals.
func (e dashboardExpr) queryWith(vars, intervals map[string]string) (string, error) {
	var errs []error
	var out strings.Builder
	last := 0
	for _, loc := range grafanaVar.FindAllStringSubmatchIndex(e.expr, -1) {
		out.WriteString(e.expr[last:loc[0]])
		last = loc[1]
		var name string
		for i := 2; i < len(loc); i += 2 {
			if loc[i] >= 0 {
				name = e.expr[loc[i]:loc[i+1]]
			}
		}
		if v, ok := intervals[name]; ok {
			out.WriteString(v)
			continue
		}
		v, ok := vars[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s uses $%s, which has no All value", e.expr, name))
			continue
		}
		if q := strings.LastIndexByte(e.expr[:loc[0]], '"'); q < 2 || (e.expr[q-2:q] != "=~" && e.expr[q-2:q] != "!~") {
			errs = append(errs, fmt.Errorf("%s uses $%s outside a regex matcher: its All value %q would be matched literally", e.expr, name, v))
		}
		out.WriteString(v)
	}
	out.WriteString(e.expr[last:])
	return out.String(), errors.Join(errs...)
}

// promRule is a rule as GET /api/v1/rules describes it.
type promRule struct {
	Name      string `json:"name"`
	Query     string `json:"query"`
	Type      string `json:"type"` // recording or alerting
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// rules returns every rule Prometheus loaded, in file order.
func (p *prometheusPeer) rules(ctx context.Context) ([]promRule, error) {
	var data struct {
		Groups []struct {
			Rules []promRule `json:"rules"`
		} `json:"groups"`
	}
	if err := p.apiGet(ctx, "/api/v1/rules", url.Values{}, &data); err != nil {
		return nil, err
	}
	var out []promRule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

// requireAllRulesLoaded checks that Prometheus loaded as many recording and
// alerting rules as the rule file has.
func requireAllRulesLoaded(t *testing.T, file string, rules []promRule) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	want := map[string]int{
		"recording": len(regexp.MustCompile(`(?m)^\s*-\s+record:`).FindAll(b, -1)),
		"alerting":  len(regexp.MustCompile(`(?m)^\s*-\s+alert:`).FindAll(b, -1)),
	}
	got := map[string]int{}
	for _, r := range rules {
		got[r.Type]++
	}
	require.Equal(t, want, got, "rules of %s loaded by Prometheus", file)
}

// alertOperands returns the operands of an alerting rule's expression that
// must all return series for it to fire: the expression split at its
// top-level "and"s, each without a top-level comparison and its threshold.
func alertOperands(expr string) []string {
	var out []string
	for _, op := range splitTopLevel(expr, isAnd) {
		if cut := strings.TrimSpace(op[:topLevelIndex(op, isComparison)]); cut != "" {
			op = cut
		}
		out = append(out, strings.TrimSpace(op))
	}
	return out
}

// splitTopLevel splits expr where match matches outside parentheses,
// brackets, braces and strings; match returns the length of the separator
// at expr[i:], 0 for none.
func splitTopLevel(expr string, match func(expr string, i int) int) []string {
	var out []string
	for {
		i := topLevelIndex(expr, match)
		if i == len(expr) {
			return append(out, expr)
		}
		out = append(out, expr[:i])
		expr = expr[i+match(expr, i):]
	}
}

// topLevelIndex returns the index of the first top-level match in expr,
// len(expr) for none.
func topLevelIndex(expr string, match func(expr string, i int) int) int {
	depth := 0
	var quote byte
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		switch {
		case quote != 0:
			if c == '\\' && quote != '`' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && match(expr, i) > 0:
			return i
		}
	}
	return len(expr)
}

// isAnd matches the keyword and, as a word.
func isAnd(expr string, i int) int {
	const kw = "and"
	word := func(j int) bool {
		if j < 0 || j >= len(expr) {
			return false
		}
		c := expr[j]
		return c == '_' || c == ':' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if strings.HasPrefix(expr[i:], kw) && !word(i-1) && !word(i+len(kw)) {
		return len(kw)
	}
	return 0
}

// isComparison matches a comparison operator.
func isComparison(expr string, i int) int {
	for _, op := range []string{"==", "!=", ">=", "<=", ">", "<"} {
		if strings.HasPrefix(expr[i:], op) {
			return len(op)
		}
	}
	return 0
}

// exprCheck is one expression to evaluate.
type exprCheck struct {
	where  string
	query  string
	series bool // it must return at least one series
}

// waitExprs evaluates every check until each runs and those that must
// return series do, or until timeout passes (then it reports those that
// still return none). The rules must also have been evaluated with health
// "ok". An expression that Prometheus refuses fails the test at once.
func waitExprs(ctx context.Context, t *testing.T, prom *prometheusPeer, checks []exprCheck, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var empty []string
		for _, c := range checks {
			res, err := prom.query(ctx, c.query)
			require.NoError(t, err, "%s: %s", c.where, c.query)
			if c.series && len(res) == 0 {
				empty = append(empty, fmt.Sprintf("%s: %s", c.where, c.query))
			}
		}
		rules, err := prom.rules(ctx)
		require.NoError(t, err)
		for _, r := range rules {
			require.NotEqual(t, "err", r.Health, "rule %s: %s", r.Name, r.LastError)
			if r.Health != "ok" {
				empty = append(empty, fmt.Sprintf("rule %s: health %q", r.Name, r.Health))
			}
		}
		if len(empty) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("not within %v of the load:\n%s", timeout, strings.Join(empty, "\n"))
			return
		}
		select {
		case err := <-prom.proc.exited:
			prom.proc.exited <- err
			t.Fatalf("prometheus exited: %v", err)
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", strings.Join(empty, "\n"), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// metricFamilies maps the metric families of an exposition to their types.
type metricFamilies map[string]string

// exposedFamilies reads the # TYPE lines of vigil's /metrics (the
// Prometheus text format, which names a counter with its _total suffix).
func exposedFamilies(ctx context.Context, t *testing.T, hc *http.Client, metricsURL string) metricFamilies {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	require.NoError(t, err)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	families := metricFamilies{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			families[f[2]] = f[3]
		}
	}
	require.NoError(t, sc.Err())
	_, _ = io.Copy(io.Discard, resp.Body)
	require.Contains(t, families, mcpconv.MetricRequestsStarted, "families of %s", metricsURL)
	return families
}

// exposes reports whether name is a family, or a series of a histogram or
// summary family (_bucket, _sum, _count).
func (m metricFamilies) exposes(name string) bool {
	if _, ok := m[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			typ := m[base]
			if typ == "histogram" || typ == "summary" && suffix != "_bucket" {
				return true
			}
		}
	}
	return false
}

// namesSharedModeMetric reports whether a query reads a metric only vigil
// -redis exposes.
func namesSharedModeMetric(q string) bool {
	for _, name := range metricNameRE.FindAllString(q, -1) {
		if sharedModeMetric(name) {
			return true
		}
	}
	return false
}

// sharedModeMetric reports whether name is one of the metrics vigil exposes
// only with -redis.
func sharedModeMetric(name string) bool {
	for _, m := range []string{
		mcpconv.MetricRedisOperationDuration, mcpconv.MetricRedisErrors,
		mcpconv.MetricRelays, mcpconv.MetricRedisUp, mcpconv.MetricRequestsLost,
		mcpconv.MetricRateLimitFallbacks, mcpconv.MetricRelaysRefused, mcpconv.MetricRedisConnectionsRefused,
	} {
		if name == m || strings.HasPrefix(name, m+"_") {
			return true
		}
	}
	return false
}

// metricNameRE matches a metric or recording rule name of vigil's: one
// that contains mcp_server_ or vigil_. A match that ends in "_" is a
// prefix (as in mcp_server_*), not a name.
var metricNameRE = regexp.MustCompile(`[A-Za-z0-9_:]*(?:mcp_server|vigil)_[A-Za-z0-9_:]*`)

// referencedMetricNames returns the metric and recording rule names written
// in the files under dirs, each with a file that has it. Go test sources
// are skipped: deploy/validate's name wrong metrics on purpose, to show its
// checker catches them.
func referencedMetricNames(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	names := map[string]string{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range metricNameRE.FindAll(b, -1) {
				name := string(m)
				if strings.HasSuffix(name, "_") {
					continue
				}
				if _, seen := names[name]; !seen {
					rel, _ := filepath.Rel(filepath.Dir(dir), path)
					names[name] = rel
				}
			}
			return nil
		})
		require.NoError(t, err)
	}
	return names
}
