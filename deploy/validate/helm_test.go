package validate

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	chartDir = "deploy/helm/vigil"
	// chartNamespace is the namespace the chart is rendered in.
	chartNamespace = "mcp"
)

// chartKubeVersion is the Kubernetes version the chart is rendered and
// linted for: the oldest its Chart.yaml admits (the preStop sleep action).
var chartKubeVersion = &chartutil.KubeVersion{Version: "v1.30.0", Major: "1", Minor: "30"}

// chartExamples returns the documented values files of the chart.
func chartExamples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(repoPath(t, chartDir+"/examples/*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 4, "the chart documents its values files in examples/")
	return files
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(repoPath(t, chartDir))
	require.NoError(t, err)
	return ch
}

func readValues(t *testing.T, path string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValuesFile(path)
	require.NoError(t, err)
	return v.AsMap()
}

// rendered is `helm template` of the chart: the manifests, one YAML
// document each in the order Helm installs them, and NOTES.txt.
type rendered struct {
	docs  []string
	notes string
}

// renderChart renders the chart as `helm template RELEASE` does (client
// only, the values checked against values.schema.json).
func renderChart(t *testing.T, release string, vals map[string]any) (rendered, error) {
	t.Helper()
	in := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	in.DryRun, in.ClientOnly, in.Replace = true, true, true
	in.ReleaseName, in.Namespace = release, chartNamespace
	in.KubeVersion = chartKubeVersion
	rel, err := in.Run(loadChart(t), vals)
	if err != nil {
		return rendered{}, err
	}
	split := releaseutil.SplitManifests(rel.Manifest)
	keys := make([]string, 0, len(split))
	for k := range split {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var r rendered
	for _, k := range keys {
		if strings.TrimSpace(split[k]) != "" {
			r.docs = append(r.docs, split[k])
		}
	}
	r.notes = rel.Info.Notes
	return r, nil
}

func mustRender(t *testing.T, release string, vals map[string]any) rendered {
	t.Helper()
	r, err := renderChart(t, release, vals)
	require.NoError(t, err)
	require.NotEmpty(t, r.docs)
	return r
}

// kindOf returns the kind and name of a manifest.
func kindOf(t *testing.T, doc string) (string, string) {
	t.Helper()
	var obj struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
	return obj.Kind, obj.Metadata.Name
}

// TestChartLint is `helm lint --strict` of the chart with its default
// values and with each documented values file: no warning, no error.
func TestChartLint(t *testing.T) {
	files := append([]string{""}, chartExamples(t)...)
	for _, f := range files {
		name := "default values"
		var vals map[string]any
		if f != "" {
			name, vals = filepath.Base(f), readValues(t, f)
		}
		t.Run(name, func(t *testing.T) {
			linter := lint.AllWithKubeVersion(repoPath(t, chartDir), vals, chartNamespace, chartKubeVersion)
			for _, m := range linter.Messages {
				assert.Less(t, m.Severity, support.WarningSev, "helm lint --strict: %s", m)
			}
		})
	}
}

// TestChartRulesAreTheDashboardRules: the PrometheusRule carries
// dashboards/rules.yml, copied into the chart (Helm reads no file outside
// it).
func TestChartRulesAreTheDashboardRules(t *testing.T) {
	assert.Equal(t, string(readRepoFile(t, rulesFile)), string(readRepoFile(t, chartDir+"/files/rules.yml")),
		"cp dashboards/rules.yml deploy/helm/vigil/files/rules.yml")
}

// TestChartExamples renders the chart with each documented values file, as
// `helm template` does, and validates every manifest with kubeconform
// (strict, the CRDs' schemas) and by strict decoding into the k8s.io/api
// types; then checks what the chart promises of each.
func TestChartExamples(t *testing.T) {
	kc := kubeconform(t)
	dec := strictDecoder(t)
	for _, f := range chartExamples(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := mustRender(t, "vigil", readValues(t, f))
			kinds := map[string]int{}
			for _, doc := range r.docs {
				kind, name := kindOf(t, doc)
				kinds[kind]++
				assert.Empty(t, kubeconformErrors(kc, doc), "kubeconform: %s %s", kind, name)
				switch kind {
				case "PrometheusRule", "ScaledObject":
					// Not in k8s.io/api: kubeconform's CRD schemas only.
				default:
					_, err := decodeStrict(t, dec, []byte(doc))
					require.NoError(t, err, "%s %s", kind, name)
				}
			}
			for _, kind := range []string{"Deployment", "Service", "ServiceAccount", "PodDisruptionBudget", "NetworkPolicy"} {
				assert.Equal(t, 1, kinds[kind], "one %s", kind)
			}
			checkChartObjects(t, r)
		})
	}
}
