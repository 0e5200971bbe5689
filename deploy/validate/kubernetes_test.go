package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	kustomizeDir = "deploy/k8s"
	// defaultShutdownGrace is cmd/vigil's -shutdown-grace default: how long
	// in-flight requests may run after SIGTERM.
	defaultShutdownGrace = 10 * time.Second
	// nonrootUID is the distroless nonroot user the Dockerfile runs as.
	nonrootUID = 65532
)

// serviceMonitor is the part of the Prometheus Operator's
// monitoring.coreos.com/v1 ServiceMonitor that deploy/k8s uses, spelled as
// the CRD spells it; strict decoding rejects any other field.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel          string               `json:"jobLabel,omitempty"`
		Selector          metav1.LabelSelector `json:"selector"`
		NamespaceSelector *struct {
			Any        bool     `json:"any,omitempty"`
			MatchNames []string `json:"matchNames,omitempty"`
		} `json:"namespaceSelector,omitempty"`
		Endpoints []struct {
			Port          string              `json:"port,omitempty"`
			TargetPort    *intstr.IntOrString `json:"targetPort,omitempty"`
			Path          string              `json:"path,omitempty"`
			Scheme        string              `json:"scheme,omitempty"`
			Interval      string              `json:"interval,omitempty"`
			ScrapeTimeout string              `json:"scrapeTimeout,omitempty"`
			HonorLabels   bool                `json:"honorLabels,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// manifests is deploy/k8s built by kustomize and decoded into typed
// objects.
type manifests struct {
	serviceAccount *corev1.ServiceAccount
	deployment     *appsv1.Deployment
	service        *corev1.Service
	pdb            *policyv1.PodDisruptionBudget
	hpa            *autoscalingv2.HorizontalPodAutoscaler
	serviceMonitor *serviceMonitor
	networkPolicy  *networkingv1.NetworkPolicy
	all            []metav1.Object
}

// strictDecoder decodes YAML into the registered k8s.io/api types the way
// the API server does in strict mode: case-sensitive, unknown and duplicate
// fields rejected.
func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, autoscalingv2.AddToScheme, networkingv1.AddToScheme,
	} {
		require.NoError(t, add(scheme))
	}
	return json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})
}

// decodeStrict decodes one manifest: ServiceMonitor into the local type,
// everything else through the API types' scheme.
func decodeStrict(t *testing.T, dec runtime.Decoder, doc []byte) (any, error) {
	t.Helper()
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	if tm.APIVersion == "monitoring.coreos.com/v1" && tm.Kind == "ServiceMonitor" {
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		sm := &serviceMonitor{}
		strict, err := sigsjson.UnmarshalStrict(j, sm)
		if err != nil {
			return nil, err
		}
		if len(strict) > 0 {
			return nil, fmt.Errorf("ServiceMonitor: %v", strict)
		}
		return sm, nil
	}
	obj, _, err := dec.Decode(doc, nil, nil)
	return obj, err
}

// buildManifests runs kustomize on deploy/k8s (in-process, as kubectl -k
// does) and strict-decodes every object it outputs.
func buildManifests(t *testing.T) manifests {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), repoPath(t, kustomizeDir))
	require.NoError(t, err)
	dec := strictDecoder(t)
	var m manifests
	for _, r := range resMap.Resources() {
		doc, err := r.AsYAML()
		require.NoError(t, err)
		obj, err := decodeStrict(t, dec, doc)
		require.NoError(t, err, "%s %s", r.GetKind(), r.GetName())
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			m.serviceAccount, m.all = o, append(m.all, o)
		case *appsv1.Deployment:
			m.deployment, m.all = o, append(m.all, o)
		case *corev1.Service:
			m.service, m.all = o, append(m.all, o)
		case *policyv1.PodDisruptionBudget:
			m.pdb, m.all = o, append(m.all, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			m.hpa, m.all = o, append(m.all, o)
		case *serviceMonitor:
			m.serviceMonitor, m.all = o, append(m.all, o)
		case *networkingv1.NetworkPolicy:
			m.networkPolicy, m.all = o, append(m.all, o)
		default:
			t.Fatalf("unexpected object %T (%s %s)", obj, r.GetKind(), r.GetName())
		}
	}
	for name, present := range map[string]bool{
		"ServiceAccount": m.serviceAccount != nil, "Deployment": m.deployment != nil, "Service": m.service != nil,
		"PodDisruptionBudget": m.pdb != nil, "HorizontalPodAutoscaler": m.hpa != nil,
		"ServiceMonitor": m.serviceMonitor != nil, "NetworkPolicy": m.networkPolicy != nil,
	} {
		require.True(t, present, "kustomize output has no %s", name)
	}
	require.Len(t, m.all, 7)
	return m
}

// TestKubernetesStrictDecoding shows that the decoder rejects the mistakes
// it is there for, and accepts a correct object.
func TestKubernetesStrictDecoding(t *testing.T) {
	dec := strictDecoder(t)
	tests := []struct {
		name    string
		doc     string
		wantErr string
	}{
		{"valid", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: 80}]}\n", ""},
		{"unknown field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n", `unknown field "spec.replica"`},
		{"wrong case", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {Type: ClusterIP}\n", `unknown field "spec.Type"`},
		{"duplicate field", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {type: ClusterIP, type: NodePort}\n", `already set`},
		{"unknown kind", "apiVersion: v1\nkind: Servise\nmetadata: {name: x}\n", `no kind "Servise"`},
		{"ServiceMonitor unknown field", "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\nspec: {endpoints: [{port: http, intervall: 5s}]}\n", `unknown field "spec.endpoints[0].intervall"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeStrict(t, dec, []byte(tt.doc))
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestKubernetesManifests(t *testing.T) {
	m := buildManifests(t)
	for _, o := range m.all {
		assert.Equal(t, "vigil", o.GetLabels()["app.kubernetes.io/part-of"], "%s: the kustomization's common label", o.GetName())
	}
	d := m.deployment
	pod := d.Spec.Template
	podLabels := k8slabels.Set(pod.Labels)

	t.Run("Deployment", func(t *testing.T) {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		require.NoError(t, err)
		assert.True(t, sel.Matches(podLabels), "the selector does not select the pod template")
		assert.Equal(t, "vigil", pod.Spec.ServiceAccountName)
		assert.Equal(t, m.serviceAccount.Name, pod.Spec.ServiceAccountName)
		require.Len(t, pod.Spec.Containers, 1)
		c := pod.Spec.Containers[0]
		assert.Empty(t, c.Command, "a command would replace the image's entrypoint, and with it -http 0.0.0.0:8080")
		flags := vigilFlags(t)
		for _, a := range c.Args {
			if name, ok := strings.CutPrefix(a, "-"); ok {
				name, _, _ = strings.Cut(strings.TrimPrefix(name, "-"), "=")
				assert.True(t, flags[name], "argument %s: cmd/vigil has no flag -%s", a, name)
			}
		}
		assert.Equal(t, "ghcr.io/vigil-mcp/vigil:dev", c.Image, "kustomize's images transformer")
		port := containerPort(t, c, "http")
		assert.Equal(t, int32(vigilPort), port.ContainerPort)
		admin := containerPort(t, c, "admin")
		assert.Equal(t, int32(adminPort), admin.ContainerPort)
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		checkVigilEnv(t, "deployment", env)
		assert.Equal(t, fmt.Sprintf(":%d", adminPort), env["VIGIL_ADMIN_HTTP"], "the admin listener on the admin port")
		assertIntrospectionSecret(t, c.Env)
		assertProbe(t, "liveness", c.LivenessProbe, "/healthz")
		assertProbe(t, "readiness", c.ReadinessProbe, "/readyz")
		assertProbe(t, "startup", c.StartupProbe, "/healthz")
		assert.False(t, c.Resources.Requests.Cpu().IsZero(), "the HPA needs a CPU request")
		assert.False(t, c.Resources.Requests.Memory().IsZero())
		assert.False(t, c.Resources.Limits.Memory().IsZero())
	})

	t.Run("security", func(t *testing.T) {
		ps := pod.Spec.SecurityContext
		require.NotNil(t, ps)
		assert.Equal(t, new(true), ps.RunAsNonRoot)
		assert.Equal(t, new(int64(nonrootUID)), ps.RunAsUser, "the Dockerfile's USER")
		require.NotNil(t, ps.SeccompProfile)
		assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, ps.SeccompProfile.Type)
		assert.Equal(t, new(false), pod.Spec.AutomountServiceAccountToken)
		sc := pod.Spec.Containers[0].SecurityContext
		require.NotNil(t, sc)
		assert.Equal(t, new(true), sc.RunAsNonRoot)
		assert.Equal(t, new(true), sc.ReadOnlyRootFilesystem)
		assert.Equal(t, new(false), sc.AllowPrivilegeEscalation)
		require.NotNil(t, sc.Capabilities)
		assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
		assert.Empty(t, sc.Capabilities.Add)
	})

	t.Run("graceful shutdown", func(t *testing.T) {
		c := pod.Spec.Containers[0]
		require.NotNil(t, c.Lifecycle)
		require.NotNil(t, c.Lifecycle.PreStop)
		require.NotNil(t, c.Lifecycle.PreStop.Sleep, "the distroless image has no sleep binary: use the sleep action")
		preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		assert.GreaterOrEqual(t, preStop, 3*time.Second, "the endpoint needs a few seconds to leave the Service")
		grace := shutdownGrace(t, c.Args)
		require.NotNil(t, pod.Spec.TerminationGracePeriodSeconds)
		termination := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
		assert.Greater(t, termination, preStop+grace+5*time.Second,
			"terminationGracePeriodSeconds must cover the preStop sleep (%s), the drain (%s) and the close", preStop, grace)
		require.NotNil(t, d.Spec.Strategy.RollingUpdate)
		assert.Equal(t, intstr.FromInt32(0), *d.Spec.Strategy.RollingUpdate.MaxUnavailable, "roll out without losing capacity")
	})

	t.Run("Service", func(t *testing.T) {
		assert.True(t, k8slabels.SelectorFromSet(m.service.Spec.Selector).Matches(podLabels), "the Service selects no pod")
		require.Len(t, m.service.Spec.Ports, 2)
		for i, name := range []string{"http", "admin"} {
			p := m.service.Spec.Ports[i]
			assert.Equal(t, name, p.Name)
			assert.Equal(t, intstr.FromString(name), p.TargetPort)
			containerPort(t, pod.Spec.Containers[0], p.TargetPort.StrVal)
		}
	})

	t.Run("PodDisruptionBudget", func(t *testing.T) {
		sel, err := metav1.LabelSelectorAsSelector(m.pdb.Spec.Selector)
		require.NoError(t, err)
		assert.True(t, sel.Matches(podLabels))
		require.NotNil(t, m.pdb.Spec.MaxUnavailable)
		assert.Nil(t, m.pdb.Spec.MinAvailable)
		assert.Equal(t, intstr.FromInt32(1), *m.pdb.Spec.MaxUnavailable)
	})

	t.Run("HorizontalPodAutoscaler", func(t *testing.T) {
		h := m.hpa
		assert.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name}, h.Spec.ScaleTargetRef)
		require.NotNil(t, h.Spec.MinReplicas)
		assert.GreaterOrEqual(t, *h.Spec.MinReplicas, int32(2), "one replica and a PDB of maxUnavailable 1 means downtime on every drain")
		assert.Greater(t, h.Spec.MaxReplicas, *h.Spec.MinReplicas)
		require.Len(t, h.Spec.Metrics, 1)
		res := h.Spec.Metrics[0].Resource
		require.NotNil(t, res)
		assert.Equal(t, corev1.ResourceCPU, res.Name)
		assert.Equal(t, autoscalingv2.UtilizationMetricType, res.Target.Type)
		require.NotNil(t, h.Spec.Behavior)
		require.NotNil(t, h.Spec.Behavior.ScaleDown)
	})

	t.Run("ServiceMonitor", func(t *testing.T) {
		sm := m.serviceMonitor
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		require.NoError(t, err)
		assert.True(t, sel.Matches(k8slabels.Set(m.service.Labels)), "the ServiceMonitor selects no Service")
		require.Len(t, sm.Spec.Endpoints, 1)
		ep := sm.Spec.Endpoints[0]
		assert.True(t, slices.ContainsFunc(m.service.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }),
			"endpoint port %q is no Service port", ep.Port)
		assert.Equal(t, "/metrics", ep.Path)
		assert.Equal(t, "admin", ep.Port, "metrics are on the admin port; the MCP port serves only /mcp")
		for _, d := range []string{ep.Interval, ep.ScrapeTimeout} {
			_, err := model.ParseDuration(d)
			require.NoError(t, err)
		}
		assert.Equal(t, "vigil", m.service.Name, "the Operator's job label is the Service name, and the alerts name job vigil")
	})

	t.Run("NetworkPolicy", func(t *testing.T) {
		np := m.networkPolicy
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		require.NoError(t, err)
		assert.True(t, sel.Matches(podLabels))
		require.NotEmpty(t, np.Spec.Ingress)
		monitoring := networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: monitoringNamespace},
			PodSelector:       &metav1.LabelSelector{MatchLabels: prometheusPod},
		}
		httpAllowed, adminAllowed := false, false
		for _, rule := range np.Spec.Ingress {
			require.NotEmpty(t, rule.Ports, "an ingress rule without ports admits every port")
			for _, p := range rule.Ports {
				require.NotNil(t, p.Port)
				switch {
				case p.Port.StrVal == "http" || p.Port.IntVal == vigilPort:
					httpAllowed = true
					assert.NotContains(t, rule.From, monitoring, "the MCP port is for clients, not Prometheus")
				case p.Port.StrVal == "admin" || p.Port.IntVal == adminPort:
					adminAllowed = true
					assert.Equal(t, []networkingv1.NetworkPolicyPeer{monitoring}, rule.From, "the admin port is for Prometheus's pods only")
				default:
					t.Errorf("ingress admits port %s", p.Port)
				}
			}
		}
		assert.True(t, httpAllowed, "no ingress rule admits port http")
		assert.True(t, adminAllowed, "no ingress rule admits port admin")
	})
}

func containerPort(t *testing.T, c corev1.Container, name string) corev1.ContainerPort {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("container %s has no port named %s", c.Name, name)
	return corev1.ContainerPort{}
}

func assertProbe(t *testing.T, kind string, p *corev1.Probe, path string) {
	t.Helper()
	if !assert.NotNil(t, p, "no %s probe", kind) || !assert.NotNil(t, p.HTTPGet, "%s probe", kind) {
		return
	}
	assert.Equal(t, path, p.HTTPGet.Path, "%s probe", kind)
	assert.Equal(t, intstr.FromString("admin"), p.HTTPGet.Port, "%s probe: the observability endpoints are on the admin port", kind)
}

// assertIntrospectionSecret checks that the introspection client id and
// secret, when the container sets them, both come from keys of one Secret,
// both optional or both not (vigil wants both or neither), and never as a
// literal value.
func assertIntrospectionSecret(t *testing.T, env []corev1.EnvVar) {
	t.Helper()
	refs := map[string]*corev1.SecretKeySelector{}
	for _, e := range env {
		if e.Name != "VIGIL_AUTH_INTROSPECTION_CLIENT_ID" && e.Name != "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET" {
			continue
		}
		assert.Empty(t, e.Value, "%s: a credential belongs in a Secret", e.Name)
		if assert.NotNil(t, e.ValueFrom, e.Name) && assert.NotNil(t, e.ValueFrom.SecretKeyRef, e.Name) {
			refs[e.Name] = e.ValueFrom.SecretKeyRef
		}
	}
	if len(refs) == 0 {
		return
	}
	require.Len(t, refs, 2, "the introspection client id and secret go together")
	id, secret := refs["VIGIL_AUTH_INTROSPECTION_CLIENT_ID"], refs["VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET"]
	assert.Equal(t, id.Name, secret.Name, "one Secret")
	assert.Equal(t, id.Optional != nil && *id.Optional, secret.Optional != nil && *secret.Optional, "both optional or neither")
}

// shutdownGrace returns the -shutdown-grace given in args, or the default.
func shutdownGrace(t *testing.T, args []string) time.Duration {
	t.Helper()
	for i, a := range args {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		name, value, hasValue := strings.Cut(a, "=")
		if name != "shutdown-grace" {
			continue
		}
		if !hasValue {
			require.Greater(t, len(args), i+1, "-shutdown-grace without a value")
			value = args[i+1]
		}
		d, err := time.ParseDuration(value)
		require.NoError(t, err)
		return d
	}
	return defaultShutdownGrace
}

// envOnly are the VIGIL_* variables cmd/vigil reads that are no flag.
var envOnly = []string{
	"VIGIL_REQUEST_STATE_KEY", "VIGIL_AUTH_INTROSPECTION_CLIENT_ID", "VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET",
	"VIGIL_AUTH_EXCHANGE_CLIENT_SECRET", "VIGIL_REDIS_PASSWORD", "VIGIL_REDIS_SENTINEL_PASSWORD",
	"VIGIL_CLUSTER_KEY", "VIGIL_CLUSTER_KEY_PREVIOUS",
}

// checkVigilEnv checks the VIGIL_* variables a deployment (where) gives
// vigil: each is one cmd/vigil reads, and since the image listens on
// 0.0.0.0, they turn authorization on (an https issuer, and the resource
// URI, which vigil cannot derive from a wildcard address) or say,
// knowingly, VIGIL_ALLOW_UNAUTHENTICATED=true; otherwise vigil refuses to
// start.
func checkVigilEnv(t *testing.T, where string, env map[string]string) {
	t.Helper()
	known := map[string]bool{}
	for name := range vigilFlags(t) {
		known["VIGIL_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))] = true
	}
	known["VIGIL_HTTP_ADDR"] = true // -http
	known["VIGIL_REDIS_URL"] = true // -redis
	for _, name := range envOnly {
		known[name] = true
	}
	for name := range env {
		if strings.HasPrefix(name, "VIGIL_") {
			assert.True(t, known[name], "%s: cmd/vigil reads no variable %s", where, name)
		}
	}
	if env["VIGIL_ALLOW_UNAUTHENTICATED"] == "true" {
		return
	}
	issuer, resource := env["VIGIL_AUTH_ISSUER"], env["VIGIL_AUTH_RESOURCE"]
	assert.True(t, strings.HasPrefix(issuer, "https://"), "%s: listening on 0.0.0.0 needs VIGIL_AUTH_ISSUER (https) or VIGIL_ALLOW_UNAUTHENTICATED=true", where)
	assert.True(t, strings.HasPrefix(resource, "https://") && strings.HasSuffix(resource, "/mcp"),
		"%s: with authorization on 0.0.0.0, VIGIL_AUTH_RESOURCE must be the public https URL of /mcp", where)
}

var flagDefRE = regexp.MustCompile(`fs\.(?:[A-Za-z0-9]+\([^,]+, |Func\()"([a-z][a-z0-9-]*)"`)

// vigilFlags returns the flags cmd/vigil defines (read from its source, so
// that work in progress there does not break this build).
func vigilFlags(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	var files []string
	// cmd/vigil's own, and those it registers of cmd/internal's packages
	// (cfg.catalogFlags.Register, cfg.connect.Register).
	for _, dir := range []string{"cmd/vigil", "cmd/internal/catalogfile", "cmd/internal/connect"} {
		more, err := filepath.Glob(repoPath(t, dir+"/*.go"))
		require.NoError(t, err)
		files = append(files, more...)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range flagDefRE.FindAllStringSubmatch(string(src), -1) {
			out[m[1]] = true
		}
	}
	require.NotEmpty(t, out, "no flag definitions found in cmd/vigil")
	return out
}
