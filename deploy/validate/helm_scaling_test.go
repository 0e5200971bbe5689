package validate

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// checkScalingQuery checks a ScaledObject's query: it parses, reads only
// series dashboards/rules.yml records (which the PrometheusRule carries),
// and only those of the Deployment's job in the release's namespace.
func checkScalingQuery(t *testing.T, query, job string) {
	t.Helper()
	expr, err := parsePromQL(query)
	require.NoError(t, err, query)
	records := map[string]bool{}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = true
			}
		}
	}
	sels := selectorsIn(expr)
	require.NotEmpty(t, sels, query)
	for _, s := range sels {
		assert.True(t, records[s.Name], "%s: %s is not recorded by %s", query, s.Name, rulesFile)
		want := map[string]string{"job": job, "namespace": chartNamespace}
		for _, m := range s.LabelMatchers {
			if v, ok := want[m.Name]; ok {
				assert.Equal(t, labels.MatchEqual, m.Type, "%s: %s", query, m.Name)
				assert.Equal(t, v, m.Value, "%s: %s", query, m.Name)
				delete(want, m.Name)
			}
		}
		assert.Empty(t, want, "%s: the query selects the release's own job and namespace", query)
	}
}

// TestScalingQueriesTested: every query of the ScaledObject of
// examples/shared-keda.yaml (release vigil, namespace mcp) is evaluated by
// a promql_expr_test of dashboards/rules_test.yml on input series, so
// `promtool test rules` (TestRulesPromtoolUnitTests) proves what value it
// reads for given per-pod series.
func TestScalingQueriesTested(t *testing.T) {
	r := mustRender(t, "vigil", readValues(t, repoPath(t, chartDir+"/examples/shared-keda.yaml")))
	var queries []string
	for _, doc := range r.docs {
		if kind, _ := kindOf(t, doc); kind != "ScaledObject" {
			continue
		}
		var so scaledObject
		require.NoError(t, yaml.Unmarshal([]byte(doc), &so))
		for _, tr := range so.Spec.Triggers {
			if q := tr.Metadata["query"]; q != "" {
				queries = append(queries, q)
			}
		}
	}
	require.Len(t, queries, 2, "requests in flight and sessions")
	tested := map[string]bool{}
	for _, tc := range loadRuleTests(t).Tests {
		for _, e := range tc.PromQLExprTests {
			if s, ok := e["expr"].(string); ok {
				tested[s] = true
			}
		}
	}
	for _, q := range queries {
		assert.True(t, tested[q], "%s has no promql_expr_test in %s", q, filepath.Base(rulesTestFile))
	}

	// The chart's README documents those queries, word for word.
	documented := map[string]bool{}
	for _, m := range readmeQueryRE.FindAllStringSubmatch(string(readRepoFile(t, chartDir+"/README.md")), -1) {
		documented[m[1]] = true
	}
	assert.Equal(t, slices.Sorted(slices.Values(queries)), slices.Sorted(maps.Keys(documented)), "the queries of the chart's README, \"Scaling\"")
}

// readmeQueryRE finds the queries the chart's README documents.
var readmeQueryRE = regexp.MustCompile("`(sum\\(job:[^`]+)`")
