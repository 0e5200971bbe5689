package validate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

const (
	dashboardFile = "dashboards/vigil.json"
	// grafanaSchemaVersion is the dashboard schemaVersion of Grafana 12 and
	// 13 (the last of the v1 JSON model); compose runs Grafana 13.
	grafanaSchemaVersion = 42
	// datasourceVar is how panels and targets name the Prometheus data
	// source: the dashboard's datasource variable.
	datasourceVar = "${datasource}"
)

type grafanaDashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Panels        []grafanaPanel
	Templating    struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []grafanaAnnotation `json:"list"`
	} `json:"annotations"`
}

type grafanaPanel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	GridPos    gridPos         `json:"gridPos"`
	Datasource *grafanaDSRef   `json:"datasource"`
	Targets    []grafanaTarget `json:"targets"`
	Panels     []grafanaPanel  `json:"panels"`
}

type gridPos struct{ H, W, X, Y int }

type grafanaDSRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaTarget struct {
	RefID        string        `json:"refId"`
	Datasource   *grafanaDSRef `json:"datasource"`
	Expr         string        `json:"expr"`
	LegendFormat string        `json:"legendFormat"`
	Exemplar     bool          `json:"exemplar"`
}

type grafanaVariable struct {
	Type       string        `json:"type"`
	Name       string        `json:"name"`
	Query      any           `json:"query"`
	Datasource *grafanaDSRef `json:"datasource"`
	Multi      bool          `json:"multi"`
	IncludeAll bool          `json:"includeAll"`
	AllValue   string        `json:"allValue"`
	Current    struct {
		Value any `json:"value"`
	} `json:"current"`
}

type grafanaAnnotation struct {
	Name       string        `json:"name"`
	Datasource *grafanaDSRef `json:"datasource"`
	Expr       string        `json:"expr"`
}

func loadDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	var d grafanaDashboard
	require.NoError(t, json.Unmarshal(readRepoFile(t, dashboardFile), &d))
	return d
}

// allPanels returns the panels, those nested in collapsed rows included.
func (d grafanaDashboard) allPanels() []grafanaPanel {
	var out []grafanaPanel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// variables returns the names of the dashboard variables.
func (d grafanaDashboard) variables() map[string]bool {
	out := map[string]bool{}
	for _, v := range d.Templating.List {
		out[v.Name] = true
	}
	return out
}

// dashboardExpr is one PromQL expression of the dashboard, where it is and
// how Grafana labels its series.
type dashboardExpr struct {
	where  string
	expr   string
	legend string
}

// exprs returns every PromQL expression of the dashboard: panel targets and
// annotation queries.
func (d grafanaDashboard) exprs() []dashboardExpr {
	var out []dashboardExpr
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			out = append(out, dashboardExpr{where: fmt.Sprintf("panel %q target %s", p.Title, tg.RefID), expr: tg.Expr, legend: tg.LegendFormat})
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			out = append(out, dashboardExpr{where: fmt.Sprintf("annotation %q", a.Name), expr: a.Expr})
		}
	}
	return out
}

func loadGrafanaSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "grafana-dashboard.jsonschema.json"))
	require.NoError(t, err)
	var s jsonschema.Schema
	require.NoError(t, json.Unmarshal(b, &s))
	rs, err := s.Resolve(nil)
	require.NoError(t, err)
	return rs
}

// TestDashboardSchema validates the dashboard against the Grafana dashboard
// JSON Schema (draft-07, from the Grafana foundation SDK), and shows that
// the validator rejects what the schema forbids.
func TestDashboardSchema(t *testing.T) {
	rs := loadGrafanaSchema(t)
	raw := readRepoFile(t, dashboardFile)
	tests := []struct {
		name    string
		mutate  func(map[string]any)
		wantErr bool
	}{
		{"as committed", func(map[string]any) {}, false},
		{"unknown top-level field", func(d map[string]any) { d["schema_version"] = 42 }, true},
		{"panel wider than the grid", func(d map[string]any) {
			d["panels"].([]any)[1].(map[string]any)["gridPos"].(map[string]any)["w"] = 25
		}, true},
		{"no templating", func(d map[string]any) { delete(d, "templating") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]any
			require.NoError(t, json.Unmarshal(raw, &doc))
			tt.mutate(doc)
			err := rs.Validate(doc)
			if tt.wantErr {
				assert.Error(t, err)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestDashboardLayout(t *testing.T) {
	d := loadDashboard(t)
	assert.Equal(t, "vigil-mcp", d.UID)
	assert.Equal(t, grafanaSchemaVersion, d.SchemaVersion)
	ids := map[int]string{}
	var cells [][24]string // occupied grid cells, row by row
	for _, p := range d.allPanels() {
		assert.NotEmpty(t, p.Title, "panel %d has no title", p.ID)
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", prev, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if !assert.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.X+g.W <= 24, "panel %q: gridPos %+v is off the grid", p.Title, g) {
			continue
		}
		for len(cells) < g.Y+g.H {
			cells = append(cells, [24]string{})
		}
		for y := g.Y; y < g.Y+g.H; y++ {
			for x := g.X; x < g.X+g.W; x++ {
				if cells[y][x] != "" {
					t.Errorf("panels %q and %q overlap at (%d,%d)", cells[y][x], p.Title, x, y)
				}
				cells[y][x] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if assert.NotNil(t, p.Datasource, "panel %q", p.Title) {
			assert.Equal(t, grafanaDSRef{Type: "prometheus", UID: datasourceVar}, *p.Datasource, "panel %q", p.Title)
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			assert.False(t, refs[tg.RefID], "panel %q: refId %s twice", p.Title, tg.RefID)
			refs[tg.RefID] = true
			if assert.NotNil(t, tg.Datasource, "panel %q", p.Title) {
				assert.Equal(t, grafanaDSRef{Type: "prometheus", UID: datasourceVar}, *tg.Datasource, "panel %q", p.Title)
			}
		}
	}
}

var labelValuesRE = regexp.MustCompile(`^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)

// TestDashboardVariables checks the datasource, method and tool variables:
// the datasource defaults to the Prometheus data source compose provisions,
// and the label_values queries name series and labels that exist.
func TestDashboardVariables(t *testing.T) {
	d := loadDashboard(t)
	cat := newCatalog(t)
	byName := map[string]grafanaVariable{}
	for _, v := range d.Templating.List {
		byName[v.Name] = v
	}
	ds, ok := byName["datasource"]
	require.True(t, ok, "no datasource variable")
	assert.Equal(t, "datasource", ds.Type)
	assert.Equal(t, "prometheus", ds.Query)
	assert.Equal(t, provisionedDatasource(t, "prometheus").UID, ds.Current.Value, "the default is the data source compose provisions")

	for name, label := range map[string]string{"method": mcpconv.LabelMethod, "tool": mcpconv.LabelTool} {
		t.Run(name, func(t *testing.T) {
			v, ok := byName[name]
			require.True(t, ok, "no %s variable", name)
			assert.Equal(t, "query", v.Type)
			if assert.NotNil(t, v.Datasource) {
				assert.Equal(t, datasourceVar, v.Datasource.UID)
			}
			assert.True(t, v.Multi && v.IncludeAll, "multi-value with All")
			assert.Equal(t, ".*", v.AllValue, "All must be a regex, not Grafana's (a|b|...) of the values it saw")
			q, _ := v.Query.(string)
			m := labelValuesRE.FindStringSubmatch(q)
			require.NotNil(t, m, "query %q is not label_values(selector, label)", q)
			assert.Equal(t, label, m[2])
			expr, err := parsePromQL(m[1])
			require.NoError(t, err)
			sel, ok := expr.(*parser.VectorSelector)
			require.True(t, ok, "%s is not a series selector", m[1])
			assert.True(t, cat.hasLabel(sel.Name, m[2]), "%s has no label %s", sel.Name, m[2])
			c := &exprChecker{cat: cat}
			assert.Empty(t, c.check(t, expr))
		})
	}
}

// TestDashboardExpressions checks every query of the dashboard: it parses
// once Grafana's variables are substituted, names only the telemetry
// package's series, labels and values, uses multi-value variables only in
// regex matchers, and its legend names only labels the result has.
func TestDashboardExpressions(t *testing.T) {
	d := loadDashboard(t)
	cat := newCatalog(t)
	c := &exprChecker{cat: cat, recorded: recordedLabels(t, cat)}
	vars := d.variables()
	exprs := d.exprs()
	require.NotEmpty(t, exprs)
	for _, e := range exprs {
		t.Run(e.where, func(t *testing.T) {
			expanded, err := expandGrafana(e.expr, vars)
			require.NoError(t, err)
			expr, err := parsePromQL(expanded)
			require.NoError(t, err, expanded)
			assert.Empty(t, c.check(t, expr))
			for _, sel := range selectorsIn(expr) {
				for _, m := range sel.LabelMatchers {
					if len(sentinelVars(m.Value, vars)) > 0 {
						assert.Contains(t, []labels.MatchType{labels.MatchRegexp, labels.MatchNotRegexp}, m.Type,
							"%s: a multi-value variable must sit in a regex matcher (=~), got %s", e.where, m)
					}
				}
			}
			out, known := c.outLabels(expr)
			if !known {
				return
			}
			for _, m := range regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`).FindAllStringSubmatch(e.legend, -1) {
				assert.Contains(t, out, m[1], "legend %q names a label the query drops", e.legend)
			}
		})
	}
}

// TestDashboardExpressionsPromtool has promtool (Prometheus 2.x) parse every
// query too, as recording rules of a generated rule file.
func TestDashboardExpressionsPromtool(t *testing.T) {
	d := loadDashboard(t)
	vars := d.variables()
	var rules []map[string]string
	for i, e := range d.exprs() {
		expanded, err := expandGrafana(e.expr, vars)
		require.NoError(t, err)
		rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard:query_%d:check", i), "expr": anyValue(expanded)})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dashboard.rules.yml"), b, 0o600))
	out, err := promtool(t, dir, "check", "rules", "dashboard.rules.yml")
	require.NoError(t, err, out)
	assert.Contains(t, out, fmt.Sprintf("SUCCESS: %d rules found", len(rules)))
}

// TestDashboardLatencyExemplars requires exemplars (trace_id, linked to
// Jaeger by the provisioned data source) on every latency query.
func TestDashboardLatencyExemplars(t *testing.T) {
	d := loadDashboard(t)
	n := 0
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			if strings.Contains(tg.Expr, "histogram_quantile") && strings.Contains(tg.Expr, mcpconv.MetricOperationDuration) {
				n++
				assert.True(t, tg.Exemplar, "panel %q target %s: exemplars off", p.Title, tg.RefID)
			}
		}
	}
	assert.GreaterOrEqual(t, n, 6, "p50/p95/p99 by method and by tool")
}

// TestDashboardCoversEveryMetric requires every metric the telemetry
// package exposes to appear on the dashboard.
func TestDashboardCoversEveryMetric(t *testing.T) {
	d := loadDashboard(t)
	cat := newCatalog(t)
	used := map[string]bool{}
	for _, e := range d.exprs() {
		expanded, err := expandGrafana(e.expr, d.variables())
		require.NoError(t, err)
		expr, err := parsePromQL(expanded)
		require.NoError(t, err)
		for _, sel := range selectorsIn(expr) {
			if s, ok := cat.series[sel.Name]; ok {
				used[s.family] = true
			}
		}
	}
	for _, f := range cat.families {
		assert.True(t, used[f], "metric %s is on no panel", f)
	}
}

// TestDashboardBreakdowns requires the breakdowns on-call looks for: rates,
// errors and latency per method and per tool, cancellations by cause, drops
// by reason, write errors by class, sessions and requests in flight, and
// authorization failures by reason.
func TestDashboardBreakdowns(t *testing.T) {
	d := loadDashboard(t)
	type breakdown struct{ series, by string }
	have := map[breakdown]bool{}
	for _, e := range d.exprs() {
		expanded, err := expandGrafana(e.expr, d.variables())
		require.NoError(t, err)
		expr, err := parsePromQL(expanded)
		require.NoError(t, err)
		parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
			agg, ok := node.(*parser.AggregateExpr)
			if !ok {
				return nil
			}
			for _, sel := range selectorsIn(agg.Expr) {
				if len(agg.Grouping) == 0 {
					have[breakdown{sel.Name, ""}] = true
				}
				for _, g := range agg.Grouping {
					have[breakdown{sel.Name, g}] = true
				}
			}
			return nil
		})
	}
	want := []breakdown{
		{mcpconv.MetricRequestsStarted, mcpconv.LabelMethod},
		{mcpconv.MetricRequestsFinished, mcpconv.LabelMethod},
		{mcpconv.MetricRequestsFinished, mcpconv.LabelOutcome},
		{mcpconv.MetricOperationDuration + "_bucket", mcpconv.LabelMethod},
		{mcpconv.MetricOperationDuration + "_bucket", mcpconv.LabelTool},
		{mcpconv.MetricOperationDuration + "_count", mcpconv.LabelTool},
		{mcpconv.MetricRequestsFinished, mcpconv.LabelErrorType},
		{mcpconv.MetricRequestsFinished, mcpconv.LabelStatusCode},
		{mcpconv.MetricCancellations, mcpconv.LabelCause},
		{mcpconv.MetricLateResponsesDropped, mcpconv.LabelReason},
		{mcpconv.MetricTransportWriteErrors, mcpconv.LabelClass},
		{mcpconv.MetricMessagesRejected, mcpconv.LabelReason},
		{mcpconv.MetricSessionsActive, mcpconv.LabelTransport},
		{mcpconv.MetricRequestsInFlight, mcpconv.LabelMethod},
		{mcpconv.MetricAuthFailures, "reason"},
	}
	for _, w := range want {
		assert.True(t, have[w], "no panel shows %s by %s", w.series, w.by)
	}
	assert.False(t, slices.ContainsFunc(d.exprs(), func(e dashboardExpr) bool { return e.expr == "" }), "a query is empty")
}
