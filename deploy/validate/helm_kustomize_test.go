package validate

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// helmOnlyLabels are the labels the chart adds that the kustomize base has
// no equivalent of: Helm's bookkeeping, and the release (instance) that
// tells two releases of one namespace apart.
var helmOnlyLabels = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"}

// normalised returns a manifest as a generic object with the Helm-only
// labels removed wherever they are (metadata, selectors, the pod
// template), as YAML: two manifests are the same object when their
// normalised forms are equal.
func normalised(t *testing.T, doc []byte) string {
	t.Helper()
	var obj any
	require.NoError(t, yaml.Unmarshal(doc, &obj))
	var walk func(any)
	walk = func(n any) {
		switch n := n.(type) {
		case map[string]any:
			for _, l := range helmOnlyLabels {
				delete(n, l)
			}
			for _, v := range n {
				walk(v)
			}
		case []any:
			for _, v := range n {
				walk(v)
			}
		}
	}
	walk(obj)
	out, err := yaml.Marshal(obj)
	require.NoError(t, err)
	return string(out)
}

// TestChartMatchesKustomizeBase: the chart with examples/k8s-base.yaml
// (release vigil) and kustomize's build of deploy/k8s are the same
// objects, field for field, but for the labels only Helm adds. A change
// to one that is not made to the other fails here.
func TestChartMatchesKustomizeBase(t *testing.T) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), repoPath(t, kustomizeDir))
	require.NoError(t, err)
	want := map[string]string{}
	for _, r := range resMap.Resources() {
		doc, err := r.AsYAML()
		require.NoError(t, err)
		want[r.GetKind()+"/"+r.GetName()] = normalised(t, doc)
	}
	got := map[string]string{}
	for _, doc := range mustRender(t, "vigil", readValues(t, repoPath(t, chartDir+"/examples/k8s-base.yaml"))).docs {
		kind, name := kindOf(t, doc)
		got[kind+"/"+name] = normalised(t, []byte(doc))
	}
	keys := func(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
	require.Equal(t, keys(want), keys(got), "the same objects")
	for k := range want {
		assert.Equal(t, want[k], got[k], "%s: deploy/k8s (expected) and the chart (actual) differ", k)
	}
}
