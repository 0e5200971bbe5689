package validate

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/vigil-mcp/vigil/gateway"
)

// scaledObject is the part of KEDA's ScaledObject the checks read.
type scaledObject struct {
	Spec struct {
		ScaleTargetRef struct {
			Name string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount int `json:"minReplicaCount"`
		Advanced        struct {
			HorizontalPodAutoscalerConfig struct {
				Behavior struct {
					ScaleDown struct {
						StabilizationWindowSeconds int `json:"stabilizationWindowSeconds"`
					} `json:"scaleDown"`
				} `json:"behavior"`
			} `json:"horizontalPodAutoscalerConfig"`
		} `json:"advanced"`
		Triggers []struct {
			Type     string            `json:"type"`
			Metadata map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}

// secretEnvNames are the variables vigil reads secrets from: each must
// come from a Secret, never a value in the pod spec.
var secretEnvNames = []string{
	"VIGIL_AUTH_INTROSPECTION_CLIENT_SECRET", "VIGIL_REDIS_PASSWORD", "VIGIL_REQUEST_STATE_KEY",
	"VIGIL_CLUSTER_KEY", "VIGIL_CLUSTER_KEY_PREVIOUS", "VIGIL_REDIS_SENTINEL_PASSWORD", "VIGIL_AUTH_EXCHANGE_CLIENT_SECRET",
}

// checkChartObjects checks the rendered chart: vigil's variables and
// authorization, secrets from Secrets only, the drain-aware probes and
// shutdown timeline, the restricted security context, the NetworkPolicy's
// hardening, and a scale-down no faster than the drain.
func checkChartObjects(t *testing.T, r rendered) {
	t.Helper()
	dec := strictDecoder(t)
	var (
		d  *appsv1.Deployment
		np *networkingv1.NetworkPolicy
		so *scaledObject
		cm *corev1.ConfigMap
	)
	for _, doc := range r.docs {
		kind, _ := kindOf(t, doc)
		switch kind {
		case "ScaledObject":
			so = &scaledObject{}
			require.NoError(t, yaml.Unmarshal([]byte(doc), so))
			continue
		case "PrometheusRule":
			continue
		}
		obj, err := decodeStrict(t, dec, []byte(doc))
		require.NoError(t, err)
		switch o := obj.(type) {
		case *appsv1.Deployment:
			d = o
		case *networkingv1.NetworkPolicy:
			np = o
		case *corev1.ConfigMap:
			cm = o
		}
	}
	require.NotNil(t, d)
	spec := d.Spec.Template.Spec
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]

	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.Value != "" {
			for _, s := range secretEnvNames {
				assert.NotEqual(t, s, e.Name, "%s must come from a Secret (valueFrom.secretKeyRef)", s)
			}
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			env[e.Name] = "from a Secret"
		}
	}
	checkVigilEnv(t, "the chart's Deployment", env)
	if env["VIGIL_ALLOW_UNAUTHENTICATED"] == "true" {
		assert.NotEmpty(t, env["VIGIL_ALLOWED_HOSTS"], "without authorization off loopback vigil refuses to start without -allowed-hosts")
	}
	flags := vigilFlags(t)
	for _, a := range c.Args {
		assert.NotContains(t, a, "password", "no secret in vigil's arguments")
		if name, ok := strings.CutPrefix(a, "-"); ok && !strings.Contains(a, "=") {
			assert.True(t, flags[name], "cmd/vigil has no flag %s", a)
		}
	}
	if cm != nil {
		require.Contains(t, c.Args, "-catalog")
		_, err := gateway.ParseCatalog([]byte(cm.Data["catalog.yaml"]))
		require.NoError(t, err, "the catalog ConfigMap")
	}

	// Drain: preStop, then SIGTERM and -shutdown-grace, before SIGKILL.
	assertProbe(t, "liveness", c.LivenessProbe, "/healthz")
	assertProbe(t, "readiness", c.ReadinessProbe, "/readyz")
	assertProbe(t, "startup", c.StartupProbe, "/healthz")
	require.NotNil(t, c.Lifecycle)
	require.NotNil(t, c.Lifecycle.PreStop)
	require.NotNil(t, c.Lifecycle.PreStop.Sleep, "the images have no sleep binary: the sleep action")
	preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	grace := shutdownGrace(t, c.Args)
	require.NotNil(t, spec.TerminationGracePeriodSeconds)
	termination := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	assert.Greater(t, termination, preStop+grace+5*time.Second, "terminationGracePeriodSeconds covers preStop, the drain and the close")

	// The restricted pod security standard.
	psc := spec.SecurityContext
	require.NotNil(t, psc)
	assert.True(t, psc.RunAsNonRoot != nil && *psc.RunAsNonRoot, "runAsNonRoot")
	require.NotNil(t, psc.SeccompProfile, "a seccomp profile")
	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.True(t, sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation, "allowPrivilegeEscalation false")
	assert.True(t, sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem, "readOnlyRootFilesystem")
	require.NotNil(t, sc.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	assert.False(t, spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken, "no service account token")
	if psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault {
		for i, a := range c.Args {
			if a == "-upstream" {
				name, target, _ := strings.Cut(c.Args[i+1], "=")
				if !strings.HasPrefix(target, "http") {
					assert.Contains(t, c.Args, "-upstream-sandbox", "under RuntimeDefault seccomp vigil's sandbox cannot start the stdio upstream %s", name)
				}
			}
		}
	}

	require.NotNil(t, np)
	require.NoError(t, checkNetworkPolicyHardening(np))

	if so != nil {
		assert.Equal(t, d.Name, so.Spec.ScaleTargetRef.Name)
		assert.GreaterOrEqual(t, so.Spec.Advanced.HorizontalPodAutoscalerConfig.Behavior.ScaleDown.StabilizationWindowSeconds,
			int(*spec.TerminationGracePeriodSeconds), "scale-down no faster than the drain")
		types := map[string]bool{}
		for _, tr := range so.Spec.Triggers {
			types[tr.Type] = true
			if tr.Type == "prometheus" {
				checkScalingQuery(t, tr.Metadata["query"], d.Name)
			}
		}
		assert.True(t, types["prometheus"], "scaled on MCP traffic")
		assert.True(t, types["cpu"], "CPU as the fallback")
	}
}
