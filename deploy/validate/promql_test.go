package validate

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parsePromQL parses expr with the default (non-experimental) PromQL
// dialect of the Prometheus version the compose stack runs.
func parsePromQL(expr string) (parser.Expr, error) {
	return parser.NewParser(parser.Options{}).ParseExpr(expr)
}

// exprChecker checks PromQL expressions against the telemetry package's
// metrics and the recording rules: every series name exists, every label
// matched or grouped by exists on it, every label value matched is one the
// package produces, rate() and increase() take counters, and
// histogram_quantile() takes buckets aggregated by le.
type exprChecker struct {
	cat *catalog
	// recorded maps each recording rule of rules.yml to its output labels.
	recorded map[string][]string
}

// check returns the problems of expr, empty when there is none.
func (c *exprChecker) check(t *testing.T, expr parser.Expr) []string {
	t.Helper()
	var problems []string
	addf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			c.checkSelector(t, n, addf)
		case *parser.AggregateExpr:
			inner, known := c.outLabels(n.Expr)
			if !known {
				break
			}
			for _, g := range n.Grouping {
				if !slices.Contains(inner, g) {
					addf("%s groups by %q, which %s does not have (it has %v)", n.Op, g, n.Expr, inner)
				}
			}
		case *parser.Call:
			c.checkCall(n, addf)
		case *parser.BinaryExpr:
			if n.VectorMatching == nil {
				break
			}
			for _, side := range []parser.Expr{n.LHS, n.RHS} {
				have, known := c.outLabels(side)
				if !known {
					continue
				}
				for _, l := range n.VectorMatching.MatchingLabels {
					if !slices.Contains(have, l) {
						addf("%s matches on %q, which %s does not have", n.Op, l, side)
					}
				}
			}
		}
		return nil
	})
	return problems
}

func (c *exprChecker) checkSelector(t *testing.T, n *parser.VectorSelector, addf func(string, ...any)) {
	t.Helper()
	name := n.Name
	_, inCatalog := c.cat.series[name]
	recordedLabels, isRecorded := c.recorded[name]
	_, isSynthetic := syntheticSeries[name]
	if !inCatalog && !isRecorded && !isSynthetic {
		addf("series %q is neither a metric of the telemetry package, nor a recording rule of rules.yml, nor one Prometheus makes", name)
		return
	}
	for _, m := range n.LabelMatchers {
		if m.Name == model.MetricNameLabel {
			continue
		}
		if isRecorded {
			if !slices.Contains(recordedLabels, m.Name) {
				addf("%s: recording rule %s has no label %q (it has %v)", n, name, m.Name, recordedLabels)
			}
			continue
		}
		if !c.cat.hasLabel(name, m.Name) {
			addf("%s: series %s has no label %q (it has %v)", n, name, m.Name, c.cat.labelsOf(name))
			continue
		}
		c.checkValues(t, n, name, m, addf)
	}
}

// checkValues checks the values a matcher names: the value of = and !=,
// each branch of a regex that is an alternation of literals.
func (c *exprChecker) checkValues(t *testing.T, n *parser.VectorSelector, name string, m *labels.Matcher, addf func(string, ...any)) {
	t.Helper()
	if strings.Contains(m.Value, grafanaVarSentinel) {
		return // a dashboard variable: any value
	}
	if m.Name == "le" {
		if !c.matchesBucket(m) {
			addf("%s: le matcher %s matches no bucket bound of telemetry.DurationBuckets in either spelling (\"1\" or \"1.0\")", n, m)
		}
		return
	}
	var values []string
	switch m.Type {
	case labels.MatchEqual, labels.MatchNotEqual:
		values = []string{m.Value}
	case labels.MatchRegexp, labels.MatchNotRegexp:
		alts, ok := literalAlternatives(m.Value)
		if !ok {
			return
		}
		values = alts
	}
	for _, v := range values {
		if !c.cat.knowsValue(t, name, m.Name, v) {
			addf("%s: the telemetry package never sets %s=%q on %s", n, m.Name, v, name)
		}
	}
}

// matchesBucket reports whether an le matcher selects at least one bucket
// bound, spelled by client_golang ("1") or by Prometheus 3 ("1.0").
func (c *exprChecker) matchesBucket(m *labels.Matcher) bool {
	for bound := range c.cat.series[bucketSeries].labels["le"] {
		spellings := []string{bound}
		if f, err := strconv.ParseFloat(bound, 64); err == nil && !strings.ContainsAny(bound, ".eE") {
			spellings = append(spellings, strconv.FormatFloat(f, 'f', 1, 64))
		}
		for _, s := range spellings {
			if m.Type == labels.MatchEqual || m.Type == labels.MatchRegexp {
				if m.Matches(s) {
					return true
				}
			}
		}
	}
	return false
}

// bucketSeries is the bucket series of the request duration histogram.
const bucketSeries = "mcp_server_operation_duration_seconds_bucket"

var literalRE = regexp.MustCompile(`^[A-Za-z0-9_/:\-]*$`)

// literalAlternatives splits a regex of the form "a|b|c" with plain
// literal branches; ok is false for any other regex.
func literalAlternatives(re string) ([]string, bool) {
	alts := strings.Split(re, "|")
	for _, a := range alts {
		if !literalRE.MatchString(a) {
			return nil, false
		}
	}
	return alts, true
}

// counterFuncs take a range of a counter.
var counterFuncs = map[string]bool{"rate": true, "increase": true, "irate": true, "resets": true}

func (c *exprChecker) checkCall(n *parser.Call, addf func(string, ...any)) {
	switch {
	case counterFuncs[n.Func.Name]:
		for _, sel := range selectorsIn(n.Args[0]) {
			if s, ok := c.cat.series[sel.Name]; ok && !s.counter {
				addf("%s() over %s, which is a gauge", n.Func.Name, sel.Name)
			}
		}
	case n.Func.Name == "histogram_quantile":
		arg := unwrap(n.Args[1])
		agg, ok := arg.(*parser.AggregateExpr)
		if !ok || agg.Without == slices.Contains(agg.Grouping, "le") {
			addf("histogram_quantile(%s): the buckets must be aggregated by le", n.Args[1])
		}
		for _, sel := range selectorsIn(n.Args[1]) {
			if !strings.HasSuffix(sel.Name, "_bucket") {
				addf("histogram_quantile() over %s, which is not a _bucket series", sel.Name)
			}
		}
	}
}

// outLabels returns the labels the result of expr carries, and whether they
// could be worked out.
func (c *exprChecker) outLabels(expr parser.Expr) ([]string, bool) {
	switch n := expr.(type) {
	case *parser.VectorSelector:
		if l, ok := c.recorded[n.Name]; ok {
			return l, true
		}
		if _, ok := c.cat.series[n.Name]; ok {
			return c.cat.labelsOf(n.Name), true
		}
		if _, ok := syntheticSeries[n.Name]; ok {
			return c.cat.labelsOf(n.Name), true
		}
		return nil, false
	case *parser.MatrixSelector:
		return c.outLabels(n.VectorSelector)
	case *parser.SubqueryExpr:
		return c.outLabels(n.Expr)
	case *parser.ParenExpr:
		return c.outLabels(n.Expr)
	case *parser.StepInvariantExpr:
		return c.outLabels(n.Expr)
	case *parser.UnaryExpr:
		return c.outLabels(n.Expr)
	case *parser.NumberLiteral, *parser.StringLiteral:
		return nil, true
	case *parser.AggregateExpr:
		if n.Without {
			inner, known := c.outLabels(n.Expr)
			return slices.DeleteFunc(slices.Clone(inner), func(l string) bool { return slices.Contains(n.Grouping, l) }), known
		}
		return slices.Clone(n.Grouping), true
	case *parser.Call:
		return c.callLabels(n)
	case *parser.BinaryExpr:
		lhs, lknown := c.outLabels(n.LHS)
		rhs, rknown := c.outLabels(n.RHS)
		switch {
		case n.LHS.Type() == parser.ValueTypeScalar:
			return rhs, rknown
		case n.RHS.Type() == parser.ValueTypeScalar, n.Op != parser.LOR:
			return lhs, lknown
		}
		out := append(slices.Clone(lhs), rhs...)
		slices.Sort(out)
		return slices.Compact(out), lknown && rknown
	}
	return nil, false
}

func (c *exprChecker) callLabels(n *parser.Call) ([]string, bool) {
	switch n.Func.Name {
	case "histogram_quantile":
		inner, known := c.outLabels(n.Args[1])
		return slices.DeleteFunc(slices.Clone(inner), func(l string) bool { return l == "le" }), known
	case "label_replace":
		inner, known := c.outLabels(n.Args[0])
		if dst, ok := unwrap(n.Args[1]).(*parser.StringLiteral); ok {
			inner = append(slices.Clone(inner), dst.Val)
		}
		return inner, known
	case "vector", "time", "scalar", "absent", "absent_over_time":
		return nil, n.Func.Name != "absent" && n.Func.Name != "absent_over_time"
	}
	for _, a := range n.Args {
		if t := a.Type(); t == parser.ValueTypeVector || t == parser.ValueTypeMatrix {
			return c.outLabels(a)
		}
	}
	return nil, false
}

// unwrap removes parentheses and step-invariant wrappers.
func unwrap(e parser.Expr) parser.Expr {
	for {
		switch n := e.(type) {
		case *parser.ParenExpr:
			e = n.Expr
		case *parser.StepInvariantExpr:
			e = n.Expr
		default:
			return e
		}
	}
}

// selectorsIn returns the vector selectors of expr.
func selectorsIn(expr parser.Expr) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

// TestExprCheckerCatchesMistakes shows that the checker used on the
// dashboard and the rules fails on each kind of mistake it is meant to
// catch, and passes a correct expression.
func TestExprCheckerCatchesMistakes(t *testing.T) {
	c := &exprChecker{cat: newCatalog(t), recorded: map[string][]string{"job:x:rate5m": {"job"}}}
	tests := []struct {
		name string
		expr string
		want string // a substring of the problems expected; "" for none
	}{
		{"correct", `histogram_quantile(0.9, sum by (le, mcp_method_name) (rate(mcp_server_operation_duration_seconds_bucket{mcp_method_name=~"tools/call|initialize", le=~"1(\\.0)?"}[5m])))`, ""},
		{"correct error types", `sum by (error_type, gen_ai_tool_name) (rate(mcp_server_requests_finished_total{error_type=~"-32603|dropped"}[5m]))`, ""},
		{"recording rule", `job:x:rate5m{job="vigil"} > 1`, ""},
		{"unknown metric", `rate(mcp_server_requests_total[5m])`, `series "mcp_server_requests_total" is neither`},
		{"histogram family name", `mcp_server_operation_duration_seconds`, `is neither`},
		{"unknown label", `mcp_server_sessions_active{method="x"}`, `has no label "method"`},
		{"unknown value", `mcp_server_messages_rejected_total{reason="too_many"}`, `never sets reason="too_many"`},
		{"unknown value in alternation", `mcp_server_cancellations_total{cause=~"timeout|deadline"}`, `never sets cause="deadline"`},
		{"error type folded into _OTHER", `mcp_server_requests_finished_total{error_type="-31999"}`, `never sets error_type="-31999"`},
		{"error type folded into _OTHER on the duration", `mcp_server_operation_duration_seconds_count{error_type="-31999"}`, `never sets error_type="-31999"`},
		{"a label the duration lacks", `mcp_server_operation_duration_seconds_count{outcome="error"}`, `has no label "outcome"`},
		{"group by a missing label", `sum by (reason) (rate(mcp_server_cancellations_total[5m]))`, `groups by "reason"`},
		{"group by a label aggregated away", `sum by (cause) (sum by (job) (rate(mcp_server_cancellations_total[5m])))`, `groups by "cause"`},
		{"rate of a gauge", `rate(mcp_server_requests_in_flight[5m])`, `over mcp_server_requests_in_flight, which is a gauge`},
		{"quantile without le", `histogram_quantile(0.9, sum by (job) (rate(mcp_server_operation_duration_seconds_bucket[5m])))`, `aggregated by le`},
		{"quantile of counts", `histogram_quantile(0.9, sum by (le) (rate(mcp_server_operation_duration_seconds_count[5m])))`, `which is not a _bucket series`},
		{"le that is no bucket", `mcp_server_operation_duration_seconds_bucket{le="0.75"}`, `matches no bucket bound`},
		{"recording rule label", `job:x:rate5m{reason="x"}`, `has no label "reason"`},
		{"match on a missing label", `mcp_server_sessions_active / on (transport, cause) mcp_server_session_duration_seconds_count`, `matches on "cause", which mcp_server_sessions_active`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expr, err := parsePromQL(tt.expr)
			require.NoError(t, err)
			problems := c.check(t, expr)
			if tt.want == "" {
				assert.Empty(t, problems)
				return
			}
			require.NotEmpty(t, problems)
			assert.Contains(t, strings.Join(problems, "\n"), tt.want)
		})
	}
}
