package validate

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yannh/kubeconform/pkg/resource"
	kcvalidator "github.com/yannh/kubeconform/pkg/validator"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// crdSchemaDir holds the JSON schemas kubeconform validates the custom
// resources with, made from the CRDs of the operators the chart targets
// by TestKubeconformCRDSchemas (VIGIL_UPDATE_CRD_SCHEMAS=1 writes them
// again; testdata/kubeconform/README.md names the sources).
const crdSchemaDir = "deploy/validate/testdata/kubeconform"

// crdSources are the CRDs the committed schemas come from: a module
// (fetched by the Go module proxy) and the CRD file in it.
var crdSources = []struct {
	schema, module, file, version string
}{
	{"servicemonitor-monitoring-v1.json", "github.com/prometheus-operator/prometheus-operator@v0.85.0", "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml", "v1"},
	{"prometheusrule-monitoring-v1.json", "github.com/prometheus-operator/prometheus-operator@v0.85.0", "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml", "v1"},
	{"scaledobject-keda-v1alpha1.json", "github.com/kedacore/keda/v2@v2.21.0", "config/crd/bases/keda.sh_scaledobjects.yaml", "v1alpha1"},
}

// builtinKinds are the built-in kinds the chart makes, by kubeconform's
// schema file name. No offline copy of Kubernetes's OpenAPI document is in
// reach of this module, so their schemas are made from the k8s.io/api Go
// types themselves (the types the API server decodes into): every field,
// no other (additionalProperties false), its JSON type.
var builtinKinds = map[string]any{
	"deployment-apps-v1":                     appsv1.Deployment{},
	"service-v1":                             corev1.Service{},
	"serviceaccount-v1":                      corev1.ServiceAccount{},
	"configmap-v1":                           corev1.ConfigMap{},
	"poddisruptionbudget-policy-v1":          policyv1.PodDisruptionBudget{},
	"horizontalpodautoscaler-autoscaling-v2": autoscalingv2.HorizontalPodAutoscaler{},
	"networkpolicy-networking-v1":            networkingv1.NetworkPolicy{},
}

// builtinSchema is the JSON schema of a k8s.io/api type as its JSON
// encoding is: every field its json tag names (an embedded struct without
// a name is inlined), no other, with its JSON type; the types with an
// encoding of their own are given by hand. No "required": the Go types
// say what may be omitted only loosely, and the API server's validation
// is not kubeconform's job.
func builtinSchema(t *testing.T, v any) []byte {
	t.Helper()
	out, err := json.Marshal(typeSchema(reflect.TypeOf(v)))
	require.NoError(t, err)
	return out
}

// ownEncodings are the k8s.io/apimachinery types whose JSON is not their
// fields'.
var ownEncodings = map[reflect.Type]map[string]any{
	reflect.TypeFor[intstr.IntOrString]():   {"type": []string{"integer", "string"}},
	reflect.TypeFor[k8sresource.Quantity](): {"type": []string{"integer", "number", "string"}},
	reflect.TypeFor[metav1.Time]():          {"type": []string{"string", "null"}},
	reflect.TypeFor[metav1.MicroTime]():     {"type": []string{"string", "null"}},
	reflect.TypeFor[metav1.Duration]():      {"type": "string"},
	reflect.TypeFor[runtime.RawExtension](): {},
	reflect.TypeFor[metav1.FieldsV1]():      {"type": "object"},
	reflect.TypeFor[[]byte]():               {"type": []string{"string", "null"}},
}

func typeSchema(t reflect.Type) map[string]any {
	if s, ok := ownEncodings[t]; ok {
		return s
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := typeSchema(t.Elem())
		if _, own := ownEncodings[t.Elem()]; own || t.Elem().Kind() == reflect.Struct {
			return s
		}
		if typ, ok := s["type"].(string); ok {
			return map[string]any{"type": []string{typ, "null"}}
		}
		return s
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": []string{"array", "null"}, "items": typeSchema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []string{"object", "null"}, "additionalProperties": typeSchema(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		addFields(t, props)
		return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	case reflect.Interface:
		return map[string]any{}
	}
	panic("no JSON schema for " + t.String())
}

// addFields adds the JSON fields of struct type t to props.
func addFields(t reflect.Type, props map[string]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
			continue
		case f.Anonymous && name == "":
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			addFields(ft, props)
			continue
		case name == "":
			name = f.Name
		}
		props[name] = typeSchema(f.Type)
	}
}

// crdToJSONSchema turns a CRD version's openAPIV3Schema into the strict
// JSON schema kubeconform reads, as openapi2jsonschema -strict does: an
// object with properties admits no other field unless the CRD keeps
// unknown fields, nullable becomes a "null" type, and an int-or-string
// field admits both.
func crdToJSONSchema(n any) any {
	switch n := n.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, v := range n {
			out[k] = crdToJSONSchema(v)
		}
		if n["x-kubernetes-int-or-string"] == true && n["anyOf"] == nil && n["oneOf"] == nil {
			delete(out, "type")
			out["anyOf"] = []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}
		}
		if n["nullable"] == true {
			if typ, ok := n["type"].(string); ok {
				out["type"] = []any{typ, "null"}
			}
		}
		_, hasProps := n["properties"]
		_, hasAdditional := n["additionalProperties"]
		if hasProps && !hasAdditional && n["x-kubernetes-preserve-unknown-fields"] != true {
			out["additionalProperties"] = false
		}
		return out
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			out[i] = crdToJSONSchema(v)
		}
		return out
	}
	return n
}

// TestKubeconformCRDSchemas checks that the committed CRD schemas are the
// ones crdToJSONSchema makes of the CRDs in crdSources, when the modules
// are in the module cache (go mod download MODULE), and writes them with
// VIGIL_UPDATE_CRD_SCHEMAS=1.
func TestKubeconformCRDSchemas(t *testing.T) {
	update := os.Getenv("VIGIL_UPDATE_CRD_SCHEMAS") == "1"
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	for _, src := range crdSources {
		t.Run(src.schema, func(t *testing.T) {
			path := filepath.Join(strings.TrimSpace(string(modcache)), src.module, src.file)
			crd, err := os.ReadFile(path)
			if os.IsNotExist(err) && !update {
				t.Skipf("%s not in the module cache: go mod download %s", src.file, src.module)
			}
			require.NoError(t, err)
			var doc struct {
				Spec struct {
					Versions []struct {
						Name   string `json:"name"`
						Schema struct {
							OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
						} `json:"schema"`
					} `json:"versions"`
				} `json:"spec"`
			}
			require.NoError(t, yaml.Unmarshal(crd, &doc))
			var schema any
			for _, v := range doc.Spec.Versions {
				if v.Name == src.version {
					schema = crdToJSONSchema(v.Schema.OpenAPIV3Schema)
				}
			}
			require.NotNil(t, schema, "%s has no version %s", src.file, src.version)
			want, err := json.MarshalIndent(schema, "", " ")
			require.NoError(t, err)
			want = append(want, '\n')
			target := repoPath(t, crdSchemaDir+"/"+src.schema)
			if update {
				require.NoError(t, os.WriteFile(target, want, 0o644))
				return
			}
			got, err := os.ReadFile(target)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "VIGIL_UPDATE_CRD_SCHEMAS=1 go test -run TestKubeconformCRDSchemas writes it again")
		})
	}
}

// kubeconform returns a strict kubeconform validator that knows the
// built-in kinds of builtinKinds and the custom resources of crdSchemaDir,
// and nothing else: a kind with no schema is an error.
func kubeconform(t *testing.T) kcvalidator.Validator {
	t.Helper()
	dir := t.TempDir()
	for name, v := range builtinKinds {
		// kubeconform's strict mode looks for the -strict file names.
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), builtinSchema(t, v), 0o644))
	}
	const file = "/{{ .ResourceKind }}{{ .KindSuffix }}.json"
	v, err := kcvalidator.New([]string{dir + file, repoPath(t, crdSchemaDir) + file}, kcvalidator.Opts{Strict: true, KubernetesVersion: "1.30.0"})
	require.NoError(t, err)
	return v
}

// kubeconformErrors validates one manifest; it returns what kubeconform
// finds wrong, or "".
func kubeconformErrors(v kcvalidator.Validator, doc string) string {
	res := v.ValidateResource(resource.Resource{Path: "manifest", Bytes: []byte(doc)})
	if res.Status == kcvalidator.Valid {
		return ""
	}
	var b strings.Builder
	if res.Err != nil {
		b.WriteString(res.Err.Error())
	}
	for _, e := range res.ValidationErrors {
		b.WriteString("; " + e.Path + ": " + e.Msg)
	}
	if b.Len() == 0 {
		b.WriteString("status " + statusName(res.Status))
	}
	return b.String()
}

func statusName(s kcvalidator.Status) string {
	switch s {
	case kcvalidator.Skipped:
		return "skipped"
	case kcvalidator.Empty:
		return "empty"
	case kcvalidator.Error:
		return "error"
	case kcvalidator.Invalid:
		return "invalid"
	}
	return "valid"
}

// TestKubeconformCatchesMistakes shows that the validator refuses what it
// is there for, built-in kind or custom resource, and accepts a correct
// object.
func TestKubeconformCatchesMistakes(t *testing.T) {
	v := kubeconform(t)
	tests := []struct{ name, doc, want string }{
		{"valid Service", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: 80, targetPort: http}]}\n", ""},
		{"valid ScaledObject", "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec: {scaleTargetRef: {name: x}, triggers: [{type: cpu, metricType: Utilization, metadata: {value: \"70\"}}]}\n", ""},
		{"unknown field of a built-in kind", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n", "replica"},
		{"wrong type of a built-in kind", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: eighty}]}\n", "port"},
		{"unknown kind", "apiVersion: v1\nkind: Servise\nmetadata: {name: x}\n", "could not find schema"},
		{"unknown field of a ServiceMonitor", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {selector: {}, endpoints: [{port: admin, intervall: 5s}]}\n", "intervall"},
		{"bad duration in a PrometheusRule", "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: x}\nspec: {groups: [{name: g, rules: [{alert: A, expr: up, for: soon}]}]}\n", "for"},
		{"ScaledObject without its target", "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: {name: x}\nspec: {triggers: [{type: cpu, metadata: {value: \"70\"}}]}\n", "scaleTargetRef"},
		{"duplicate field", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {type: ClusterIP, type: NodePort}\n", "already"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := kubeconformErrors(v, tt.doc)
			if tt.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tt.want)
		})
	}
}
