package validate

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The labels the admin port's NetworkPolicy peer must match, and a
// neighbor in the same namespace it must not.
var (
	monitoringNamespace = k8slabels.Set{"kubernetes.io/metadata.name": "monitoring"}
	prometheusPod       = k8slabels.Set{"app.kubernetes.io/name": "prometheus"}
	otherMonitoringPod  = k8slabels.Set{"app.kubernetes.io/name": "grafana"}
	otherNamespace      = k8slabels.Set{"kubernetes.io/metadata.name": "default"}
)

// checkComposeHardening returns every way project p exposes more than a
// local demo should: a port published beyond the host's loopback,
// Prometheus's lifecycle API, Grafana's anonymous user above Viewer.
func checkComposeHardening(p *types.Project) error {
	var errs []error
	for _, name := range p.ServiceNames() {
		s := p.Services[name]
		for _, pc := range s.Ports {
			if pc.HostIP != "127.0.0.1" {
				errs = append(errs, fmt.Errorf("service %s publishes port %d on %q, not 127.0.0.1", name, pc.Target, pc.HostIP))
			}
		}
		for _, arg := range slices.Concat(s.Entrypoint, s.Command) {
			if strings.HasPrefix(strings.TrimLeft(arg, "-"), "web.enable-lifecycle") ||
				strings.HasPrefix(strings.TrimLeft(arg, "-"), "web.enable-admin-api") {
				errs = append(errs, fmt.Errorf("service %s: %s lets any local process reload, stop or wipe Prometheus", name, arg))
			}
		}
		env := s.Environment.RemoveEmpty()
		if v := env["GF_AUTH_ANONYMOUS_ENABLED"]; v != nil && strings.EqualFold(*v, "true") {
			role := env["GF_AUTH_ANONYMOUS_ORG_ROLE"]
			// Grafana's default anonymous role is Viewer.
			if role != nil && !strings.EqualFold(*role, "Viewer") {
				errs = append(errs, fmt.Errorf("service %s: anonymous Grafana users are %s, not Viewer", name, *role))
			}
		}
	}
	return errors.Join(errs...)
}

// checkNetworkPolicyHardening returns every way np admits more than it
// should: an egress rule to any address (no peer, or an ipBlock of prefix
// length 0), or an admin-port ingress peer that is not the Prometheus pods
// of the monitoring namespace.
func checkNetworkPolicyHardening(np *networkingv1.NetworkPolicy) error {
	var errs []error
	for i, rule := range np.Spec.Egress {
		if len(rule.To) == 0 {
			errs = append(errs, fmt.Errorf("egress rule %d has no peer: it admits every address", i))
		}
		for _, to := range rule.To {
			if to.IPBlock == nil {
				continue
			}
			prefix, err := netip.ParsePrefix(to.IPBlock.CIDR)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("egress rule %d: %w", i, err))
			case prefix.Bits() == 0:
				errs = append(errs, fmt.Errorf("egress rule %d admits every address (%s): name the CIDRs in values.yaml", i, prefix))
			}
		}
	}
	admin := false
	for i, rule := range np.Spec.Ingress {
		if !slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool {
			return p.Port == nil || *p.Port == intstr.FromString("admin") || *p.Port == intstr.FromInt32(adminPort)
		}) {
			continue
		}
		admin = true
		if len(rule.From) == 0 {
			errs = append(errs, fmt.Errorf("ingress rule %d admits the admin port from anywhere", i))
		}
		for j, from := range rule.From {
			if err := checkPrometheusPeer(from); err != nil {
				errs = append(errs, fmt.Errorf("ingress rule %d, peer %d, to the admin port: %w", i, j, err))
			}
		}
	}
	if !admin {
		errs = append(errs, errors.New("no ingress rule admits the admin port: Prometheus cannot scrape"))
	}
	return errors.Join(errs...)
}

// checkPrometheusPeer returns an error unless peer selects Prometheus pods
// in the monitoring namespace and nothing else there or elsewhere.
func checkPrometheusPeer(peer networkingv1.NetworkPolicyPeer) error {
	if peer.IPBlock != nil || peer.NamespaceSelector == nil || peer.PodSelector == nil {
		return errors.New("want one peer with both a namespaceSelector and a podSelector")
	}
	ns, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
	if err != nil {
		return err
	}
	pods, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
	if err != nil {
		return err
	}
	switch {
	case !ns.Matches(monitoringNamespace) || !pods.Matches(prometheusPod):
		return errors.New("Prometheus in the monitoring namespace is not admitted")
	case ns.Matches(otherNamespace):
		return errors.New("namespaces other than monitoring are admitted")
	case pods.Matches(otherMonitoringPod):
		return errors.New("pods other than Prometheus are admitted")
	}
	return nil
}

// firstPortOn returns a mutation that publishes service's first port on
// the host address ip ("" for every interface).
func firstPortOn(service, ip string) func(*types.Project) {
	return func(p *types.Project) {
		s := p.Services[service]
		s.Ports = slices.Clone(s.Ports)
		s.Ports[0].HostIP = ip
		p.Services[service] = s
	}
}

// TestComposeHardening checks both compose files, then shows that each
// check fails on a manifest mutated to break it.
func TestComposeHardening(t *testing.T) {
	for name, load := range map[string]func(*testing.T) *types.Project{
		composeFile: loadCompose, composeSharedFile: loadSharedCompose,
	} {
		t.Run(name, func(t *testing.T) {
			assert.NoError(t, checkComposeHardening(load(t)))
		})
	}

	mutations := []struct {
		name    string
		load    func(*testing.T) *types.Project
		mutate  func(*types.Project)
		wantErr string
	}{
		{"a port on all interfaces", loadCompose, firstPortOn("jaeger", ""), "service jaeger publishes port"},
		{"a port on a LAN address", loadCompose, firstPortOn("grafana", "192.168.1.10"), "service grafana publishes port 3000"},
		{"a shared replica on all interfaces", loadSharedCompose, firstPortOn("proxy", "0.0.0.0"), "service proxy publishes port 8080"},
		{"Redis published", loadSharedCompose, func(p *types.Project) {
			s := p.Services["redis"]
			s.Ports = append(slices.Clone(s.Ports), types.ServicePortConfig{Target: 6379, Published: "6379", Protocol: "tcp"})
			p.Services["redis"] = s
		}, "service redis publishes port 6379"},
		{"the lifecycle API", loadCompose, func(p *types.Project) {
			s := p.Services["prometheus"]
			s.Command = append(slices.Clone(s.Command), "--web.enable-lifecycle")
			p.Services["prometheus"] = s
		}, "--web.enable-lifecycle"},
		{"anonymous Admin", loadCompose, func(p *types.Project) {
			s := p.Services["grafana"]
			s.Environment = maps.Clone(s.Environment)
			s.Environment["GF_AUTH_ANONYMOUS_ORG_ROLE"] = new("Admin")
			p.Services["grafana"] = s
		}, "anonymous Grafana users are Admin"},
		{"anonymous Editor", loadCompose, func(p *types.Project) {
			s := p.Services["grafana"]
			s.Environment = maps.Clone(s.Environment)
			s.Environment["GF_AUTH_ANONYMOUS_ORG_ROLE"] = new("Editor")
			p.Services["grafana"] = s
		}, "anonymous Grafana users are Editor"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			p := m.load(t)
			m.mutate(p)
			assert.ErrorContains(t, checkComposeHardening(p), m.wantErr)
		})
	}
}

// TestNetworkPolicyHardening checks vigil's NetworkPolicy in deploy/k8s and
// in the deploy/k8s-shared overlay, then shows that each check fails on a
// policy mutated to break it.
func TestNetworkPolicyHardening(t *testing.T) {
	np := buildManifests(t).networkPolicy
	require.NoError(t, checkNetworkPolicyHardening(np))
	require.NoError(t, checkNetworkPolicyHardening(sharedNetworkPolicy(t)))

	values := readRepoFile(t, "deploy/k8s/values.yaml")
	for _, rule := range np.Spec.Egress {
		for _, to := range rule.To {
			if to.IPBlock != nil {
				assert.Contains(t, string(values), to.IPBlock.CIDR, "the egress CIDRs come from values.yaml")
				prefix, err := netip.ParsePrefix(to.IPBlock.CIDR)
				require.NoError(t, err)
				assert.True(t, netip.MustParsePrefix("192.0.2.0/24").Overlaps(prefix),
					"%s: the shipped placeholder is in the documentation range (RFC 5737)", prefix)
			}
		}
	}

	adminRule := func(p *networkingv1.NetworkPolicy) *networkingv1.NetworkPolicyIngressRule {
		for i, r := range p.Spec.Ingress {
			if slices.ContainsFunc(r.Ports, func(pp networkingv1.NetworkPolicyPort) bool { return pp.Port.StrVal == "admin" }) {
				return &p.Spec.Ingress[i]
			}
		}
		t.Fatal("no admin ingress rule")
		return nil
	}
	mutations := []struct {
		name    string
		mutate  func(*networkingv1.NetworkPolicy)
		wantErr string
	}{
		{"egress to 0.0.0.0/0", func(p *networkingv1.NetworkPolicy) {
			p.Spec.Egress[1].To[0].IPBlock.CIDR = "0.0.0.0/0"
		}, "admits every address (0.0.0.0/0)"},
		{"egress to ::/0", func(p *networkingv1.NetworkPolicy) {
			p.Spec.Egress = append(p.Spec.Egress, networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "::/0"}}}})
		}, "admits every address (::/0)"},
		{"egress with ports and no peer", func(p *networkingv1.NetworkPolicy) {
			p.Spec.Egress[2].To = nil
		}, "egress rule 2 has no peer"},
		{"admin from the whole monitoring namespace", func(p *networkingv1.NetworkPolicy) {
			adminRule(p).From[0].PodSelector = nil
		}, "want one peer with both"},
		{"admin from every pod of monitoring", func(p *networkingv1.NetworkPolicy) {
			adminRule(p).From[0].PodSelector = &metav1.LabelSelector{}
		}, "pods other than Prometheus are admitted"},
		{"admin from Prometheus in every namespace", func(p *networkingv1.NetworkPolicy) {
			adminRule(p).From[0].NamespaceSelector = &metav1.LabelSelector{}
		}, "namespaces other than monitoring are admitted"},
		{"admin from Prometheus of another namespace", func(p *networkingv1.NetworkPolicy) {
			adminRule(p).From[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: otherNamespace}
		}, "Prometheus in the monitoring namespace is not admitted"},
		{"admin from anywhere", func(p *networkingv1.NetworkPolicy) {
			adminRule(p).From = nil
		}, "admits the admin port from anywhere"},
		{"admin from a second, wider peer", func(p *networkingv1.NetworkPolicy) {
			r := adminRule(p)
			r.From = append(r.From, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}})
		}, "peer 1, to the admin port: want one peer"},
		{"no admin rule", func(p *networkingv1.NetworkPolicy) {
			p.Spec.Ingress = slices.DeleteFunc(p.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool {
				return r.Ports[0].Port.StrVal == "admin"
			})
		}, "no ingress rule admits the admin port"},
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			p := np.DeepCopy()
			m.mutate(p)
			assert.ErrorContains(t, checkNetworkPolicyHardening(p), m.wantErr)
		})
	}
}

// sharedNetworkPolicy returns vigil's NetworkPolicy as the deploy/k8s-shared
// overlay builds it.
func sharedNetworkPolicy(t *testing.T) *networkingv1.NetworkPolicy {
	t.Helper()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), repoPath(t, kustomizeSharedDir))
	require.NoError(t, err)
	dec := strictDecoder(t)
	for _, r := range resMap.Resources() {
		if r.GetKind() != "NetworkPolicy" || r.GetName() != "vigil" {
			continue
		}
		doc, err := r.AsYAML()
		require.NoError(t, err)
		obj, err := decodeStrict(t, dec, doc)
		require.NoError(t, err)
		return obj.(*networkingv1.NetworkPolicy)
	}
	t.Fatalf("%s has no NetworkPolicy vigil", kustomizeSharedDir)
	return nil
}
