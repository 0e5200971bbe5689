package validate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const kustomizeSharedDir = "deploy/k8s-shared"

// TestKubernetesSharedOverlay builds deploy/k8s-shared, strict-decodes
// every object, and checks the shared mode's wiring: every replica on the
// Redis of the overlay with the request-state and cluster keys of one Secret, no
// session affinity, Redis reachable from vigil's pods and only from them.
func TestKubernetesSharedOverlay(t *testing.T) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), repoPath(t, kustomizeSharedDir))
	require.NoError(t, err)
	dec := strictDecoder(t)
	deployments := map[string]*appsv1.Deployment{}
	statefulSets := map[string]*appsv1.StatefulSet{}
	services := map[string]*corev1.Service{}
	policies := map[string]*networkingv1.NetworkPolicy{}
	for _, r := range resMap.Resources() {
		doc, err := r.AsYAML()
		require.NoError(t, err)
		obj, err := decodeStrict(t, dec, doc)
		require.NoError(t, err, "%s %s", r.GetKind(), r.GetName())
		switch o := obj.(type) {
		case *appsv1.Deployment:
			deployments[o.Name] = o
		case *appsv1.StatefulSet:
			statefulSets[o.Name] = o
		case *corev1.Service:
			services[o.Name] = o
		case *networkingv1.NetworkPolicy:
			policies[o.Name] = o
		}
	}
	assert.Len(t, resMap.Resources(), 7+3, "the base's objects and Redis's Service, StatefulSet and NetworkPolicy")

	vigil := deployments["vigil"]
	require.NotNil(t, vigil)
	assert.GreaterOrEqual(t, *vigil.Spec.Replicas, int32(2))
	env := map[string]corev1.EnvVar{}
	for _, c := range vigil.Spec.Template.Spec.Containers {
		if c.Name == "vigil" {
			for _, e := range c.Env {
				env[e.Name] = e
			}
		}
	}
	assert.Contains(t, env, "VIGIL_AUTH_ISSUER", "the base's environment is kept")
	require.Contains(t, env, "VIGIL_REDIS_URL")
	redisSvc := services["vigil-redis"]
	require.NotNil(t, redisSvc)
	assert.Equal(t, "rediss://vigil@"+redisSvc.Name+":6379/0", env["VIGIL_REDIS_URL"].Value)
	require.Contains(t, env, "VIGIL_REQUEST_STATE_KEY")
	require.NotNil(t, env["VIGIL_REQUEST_STATE_KEY"].ValueFrom)
	require.NotNil(t, env["VIGIL_REQUEST_STATE_KEY"].ValueFrom.SecretKeyRef, "the key comes from a Secret")
	assert.Equal(t, "vigil-shared", env["VIGIL_REQUEST_STATE_KEY"].ValueFrom.SecretKeyRef.Name)
	// The cluster key, and the previous one during a rotation, from the
	// Secret only: never a value in the manifests.
	for _, name := range []string{"VIGIL_CLUSTER_KEY", "VIGIL_CLUSTER_KEY_PREVIOUS"} {
		require.Contains(t, env, name)
		assert.Empty(t, env[name].Value, "%s is not inline", name)
		require.NotNil(t, env[name].ValueFrom, name)
		require.NotNil(t, env[name].ValueFrom.SecretKeyRef, "%s comes from a Secret", name)
		assert.Equal(t, "vigil-shared", env[name].ValueFrom.SecretKeyRef.Name, name)
	}
	assert.Nil(t, env["VIGIL_CLUSTER_KEY"].ValueFrom.SecretKeyRef.Optional, "vigil -redis needs the cluster key")

	svc := services["vigil"]
	require.NotNil(t, svc)
	assert.NotEqual(t, corev1.ServiceAffinityClientIP, svc.Spec.SessionAffinity, "no session affinity")

	redis := statefulSets["vigil-redis"]
	require.NotNil(t, redis)
	redisPods := k8slabels.Set(redis.Spec.Template.Labels)
	assert.True(t, k8slabels.SelectorFromSet(redisSvc.Spec.Selector).Matches(redisPods), "the Redis Service selects Redis's pods")
	require.Len(t, redis.Spec.Template.Spec.Containers, 1)
	assert.Contains(t, redis.Spec.Template.Spec.Containers[0].Args, "--appendonly", "sessions survive a Redis restart")
	assert.NotEmpty(t, redis.Spec.VolumeClaimTemplates)

	// vigil may reach Redis; Redis admits only vigil's pods.
	vigilPods := k8slabels.Set(vigil.Spec.Template.Labels)
	egress := policies["vigil"]
	require.NotNil(t, egress)
	var reaches bool
	for _, rule := range egress.Spec.Egress {
		for _, to := range rule.To {
			if to.PodSelector == nil {
				continue
			}
			s, err := metav1.LabelSelectorAsSelector(to.PodSelector)
			require.NoError(t, err)
			for _, p := range rule.Ports {
				if s.Matches(redisPods) && p.Port != nil && p.Port.IntValue() == 6379 {
					reaches = true
				}
			}
		}
	}
	assert.True(t, reaches, "vigil's NetworkPolicy lets it reach Redis on 6379")
	ingress := policies["vigil-redis"]
	require.NotNil(t, ingress)
	s, err := metav1.LabelSelectorAsSelector(&ingress.Spec.PodSelector)
	require.NoError(t, err)
	assert.True(t, s.Matches(redisPods))
	require.Len(t, ingress.Spec.Ingress, 1)
	for _, from := range ingress.Spec.Ingress[0].From {
		require.NotNil(t, from.PodSelector, "only pods of this namespace")
		assert.Nil(t, from.NamespaceSelector)
		s, err := metav1.LabelSelectorAsSelector(from.PodSelector)
		require.NoError(t, err)
		assert.True(t, s.Matches(vigilPods), "vigil's pods reach Redis")
		assert.False(t, s.Matches(k8slabels.Set{"app.kubernetes.io/name": "other"}), "other pods do not")
	}
}
