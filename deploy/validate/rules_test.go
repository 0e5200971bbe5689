package validate

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const (
	rulesFile     = "dashboards/rules.yml"
	rulesTestFile = "dashboards/rules_test.yml"
)

// ruleFile is a Prometheus rule file; unknown fields are rejected.
type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []rule `json:"rules"`
}

type rule struct {
	Record        string            `json:"record,omitempty"`
	Alert         string            `json:"alert,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// ruleTestFile is a promtool rule unit-test file, as far as these checks
// read it.
type ruleTestFile struct {
	RuleFiles          []string   `json:"rule_files"`
	EvaluationInterval string     `json:"evaluation_interval"`
	Tests              []ruleTest `json:"tests"`
}

type ruleTest struct {
	Name           string           `json:"name"`
	Interval       string           `json:"interval"`
	InputSeries    []map[string]any `json:"input_series"`
	AlertRuleTests []struct {
		EvalTime  string           `json:"eval_time"`
		Alertname string           `json:"alertname"`
		ExpAlerts []map[string]any `json:"exp_alerts"`
	} `json:"alert_rule_test"`
	PromQLExprTests []map[string]any `json:"promql_expr_test"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	var rf ruleFile
	require.NoError(t, yaml.UnmarshalStrict(readRepoFile(t, rulesFile), &rf), rulesFile)
	require.NotEmpty(t, rf.Groups)
	return rf
}

// alerts returns the alerting rules of rf in order.
func (rf ruleFile) alerts() []rule {
	var out []rule
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

// recordedLabels returns the recording rules of rules.yml with their output
// labels, worked out in file order so that rules may build on earlier ones.
func recordedLabels(t *testing.T, cat *catalog) map[string][]string {
	t.Helper()
	c := &exprChecker{cat: cat, recorded: map[string][]string{}}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			expr, err := parsePromQL(r.Expr)
			require.NoError(t, err, "recording rule %s", r.Record)
			out, known := c.outLabels(expr)
			require.True(t, known, "cannot work out the labels of recording rule %s", r.Record)
			c.recorded[r.Record] = out
		}
	}
	return c.recorded
}

func TestRulesPromtoolCheck(t *testing.T) {
	out, err := promtool(t, repoRoot(t), "check", "rules", filepath.FromSlash(rulesFile))
	require.NoError(t, err, out)
	assert.Contains(t, out, "SUCCESS")
}

func TestRulesPromtoolUnitTests(t *testing.T) {
	out, err := promtool(t, repoRoot(t), "test", "rules", filepath.FromSlash(rulesTestFile))
	require.NoError(t, err, out)
	assert.Contains(t, out, "SUCCESS")
}

var recordNameRE = regexp.MustCompile(`^[a-z_]+:[a-z_]+:[a-z0-9_]+$`)

// TestRulesExpressions parses every rule with the PromQL parser of the
// Prometheus version compose runs and checks it against the telemetry
// package's metrics; alerts carry a severity and the annotations on-call
// needs.
func TestRulesExpressions(t *testing.T) {
	cat := newCatalog(t)
	c := &exprChecker{cat: cat, recorded: recordedLabels(t, cat)}
	names := map[string]bool{}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			name := r.Record + r.Alert
			t.Run(name, func(t *testing.T) {
				require.NotEqual(t, r.Record == "", r.Alert == "", "a rule is either a recording rule or an alert")
				assert.False(t, names[name], "duplicate rule name %s", name)
				names[name] = true
				expr, err := parsePromQL(r.Expr)
				require.NoError(t, err)
				assert.Empty(t, c.check(t, expr))
				if r.Record != "" {
					assert.Regexp(t, recordNameRE, r.Record, "recording rules are named level:metric:operations")
					assert.Empty(t, r.For)
					return
				}
				assert.True(t, strings.HasPrefix(r.Alert, "Vigil"), "alert names start with Vigil (the dashboard's alert annotation selects Vigil.*)")
				assert.Contains(t, []string{"critical", "warning"}, r.Labels["severity"])
				assert.NotEmpty(t, r.Annotations["summary"])
				assert.NotEmpty(t, r.Annotations["description"])
				if r.For != "" {
					_, err := model.ParseDuration(r.For)
					assert.NoError(t, err)
				}
			})
		}
	}
}

func loadRuleTests(t *testing.T) ruleTestFile {
	t.Helper()
	var tf ruleTestFile
	require.NoError(t, yaml.Unmarshal(readRepoFile(t, rulesTestFile), &tf), rulesTestFile)
	return tf
}

// TestRulesTestsCoverEveryAlert checks that rules_test.yml has, for every
// alert, a case where it fires and a case where it does not, and names no
// alert rules.yml lacks.
func TestRulesTestsCoverEveryAlert(t *testing.T) {
	tf := loadRuleTests(t)
	assert.Equal(t, []string{"rules.yml"}, tf.RuleFiles)
	firing, silent := map[string]int{}, map[string]int{}
	for _, tc := range tf.Tests {
		assert.NotEmpty(t, tc.Name, "every test case has a name")
		for _, a := range tc.AlertRuleTests {
			if len(a.ExpAlerts) > 0 {
				firing[a.Alertname]++
			} else {
				silent[a.Alertname]++
			}
		}
	}
	var alerts []string
	for _, r := range loadRules(t).alerts() {
		alerts = append(alerts, r.Alert)
		assert.Positive(t, firing[r.Alert], "%s: no test case where it fires", r.Alert)
		assert.Positive(t, silent[r.Alert], "%s: no test case where it stays silent", r.Alert)
	}
	for name := range firing {
		assert.Contains(t, alerts, name, "rules_test.yml tests an alert rules.yml does not define")
	}
	for name := range silent {
		assert.Contains(t, alerts, name, "rules_test.yml tests an alert rules.yml does not define")
	}
}

// TestRulesTestsCatchBrokenAlerts mutates each alert of rules.yml into one
// that never fires and one that always fires, and requires rules_test.yml to
// fail on each mutant: the tests pin every alert both ways.
func TestRulesTestsCatchBrokenAlerts(t *testing.T) {
	var raw, rawTests map[string]any
	require.NoError(t, yaml.Unmarshal(readRepoFile(t, rulesFile), &raw))
	require.NoError(t, yaml.Unmarshal(readRepoFile(t, rulesTestFile), &rawTests))
	mutants := []struct {
		name   string
		mutate func(expr string) string
	}{
		{"never fires", func(expr string) string { return "(" + expr + ") and on () vector(0) == 1" }},
		{"always fires", func(expr string) string {
			return "(" + expr + `) or on () label_replace(vector(1), "job", "vigil", "", "")`
		}},
	}
	for _, a := range loadRules(t).alerts() {
		for _, m := range mutants {
			t.Run(a.Alert+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yml"), mutateAlert(t, raw, a.Alert, m.mutate), 0o600))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "rules_test.yml"), testsOf(t, rawTests, a.Alert), 0o600))
				out, err := promtool(t, dir, "test", "rules", "rules_test.yml")
				require.Error(t, err, "rules_test.yml passes with %s mutated to %q:\n%s", a.Alert, m.name, out)
				assert.Contains(t, out, a.Alert)
			})
		}
	}
}

// testsOf returns rules_test.yml cut down to the alert tests of alert, to
// keep the mutation runs short.
func testsOf(t *testing.T, rawTests map[string]any, alert string) []byte {
	t.Helper()
	doc := deepCopy(t, rawTests)
	var kept []any
	for _, tc := range doc["tests"].([]any) {
		tm := tc.(map[string]any)
		delete(tm, "promql_expr_test")
		art, _ := tm["alert_rule_test"].([]any)
		tm["alert_rule_test"] = slices.DeleteFunc(art, func(a any) bool { return a.(map[string]any)["alertname"] != alert })
		if len(tm["alert_rule_test"].([]any)) > 0 {
			kept = append(kept, tm)
		}
	}
	require.NotEmpty(t, kept, "no test of %s", alert)
	doc["tests"] = kept
	out, err := yaml.Marshal(doc)
	require.NoError(t, err)
	return out
}

// deepCopy copies a decoded YAML document.
func deepCopy(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	b, err := yaml.Marshal(doc)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, yaml.Unmarshal(b, &out))
	return out
}

// mutateAlert returns rules.yml with the expression of alert passed through
// mutate.
func mutateAlert(t *testing.T, raw map[string]any, alert string, mutate func(string) string) []byte {
	t.Helper()
	doc := deepCopy(t, raw)
	found := false
	for _, g := range doc["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			rm := r.(map[string]any)
			if rm["alert"] == alert {
				rm["expr"] = mutate(rm["expr"].(string))
				found = true
			}
		}
	}
	require.True(t, found, alert)
	out, err := yaml.Marshal(doc)
	require.NoError(t, err)
	return out
}
