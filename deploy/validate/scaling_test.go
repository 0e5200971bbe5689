package validate

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	envelopev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/envelope/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	// The filters the Envoy example names in typed_config; protojson
	// resolves google.protobuf.Any through the registry they join.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
)

const scalingDoc = "deploy/SCALING.md"

// sessionHeader is the header of a 2025-era session (Envoy matches header
// names in lower case).
const sessionHeader = "mcp-session-id"

var yamlBlockRE = regexp.MustCompile("(?ms)^```yaml\n(.*?)^```")

// scalingBlocks returns the YAML code blocks of SCALING.md.
func scalingBlocks(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range yamlBlockRE.FindAllStringSubmatch(string(readRepoFile(t, scalingDoc)), -1) {
		out = append(out, m[1])
	}
	require.NotEmpty(t, out)
	return out
}

// validator is implemented by the go-control-plane types
// (protoc-gen-validate rules from Envoy's API).
type validator interface{ ValidateAll() error }

// unpackValid unpacks a typed_config and applies its Envoy validation rules.
func unpackValid(t *testing.T, a *anypb.Any) proto.Message {
	t.Helper()
	require.NotNil(t, a, "typed_config missing")
	m, err := a.UnmarshalNew()
	require.NoError(t, err, "typed_config %s", a.GetTypeUrl())
	v, ok := m.(validator)
	require.True(t, ok, "%T has no validation", m)
	require.NoError(t, v.ValidateAll(), "%s", a.GetTypeUrl())
	return m
}

// TestScalingDocExamples checks every YAML block of SCALING.md: the headless
// Service and the Ingress strict-decode into the Kubernetes types and fit
// deploy/k8s; the Envoy configuration decodes into the Envoy API types,
// passes Envoy's validation rules, keeps sessions on their replica with the
// envelope stateful session on Mcp-Session-Id, and reaches the pods through
// the headless Service. Any other block fails the test.
func TestScalingDocExamples(t *testing.T) {
	m := buildManifests(t)
	podLabels := k8slabels.Set(m.deployment.Spec.Template.Labels)
	dec := strictDecoder(t)
	var headless *corev1.Service
	var envoyBlocks []string
	seen := map[string]bool{}
	for _, block := range scalingBlocks(t) {
		var probe map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(block), &probe))
		if _, ok := probe["static_resources"]; ok {
			envoyBlocks = append(envoyBlocks, block)
			seen["envoy"] = true
			continue
		}
		obj, err := decodeStrict(t, dec, []byte(block))
		require.NoError(t, err, block)
		switch o := obj.(type) {
		case *corev1.Service:
			headless = o
			seen["Service"] = true
			assert.Equal(t, corev1.ClusterIPNone, o.Spec.ClusterIP, "Envoy needs the pod addresses: a headless Service")
			assert.True(t, k8slabels.SelectorFromSet(o.Spec.Selector).Matches(podLabels), "the headless Service selects no Vigil pod")
			sel, err := metav1.LabelSelectorAsSelector(&m.serviceMonitor.Spec.Selector)
			require.NoError(t, err)
			assert.False(t, sel.Matches(k8slabels.Set(o.Labels)), "the ServiceMonitor would scrape the pods twice")
			require.Len(t, o.Spec.Ports, 1)
			assert.Equal(t, intstr.FromString("http"), o.Spec.Ports[0].TargetPort)
		case *networkingv1.Ingress:
			seen["Ingress"] = true
			checkIngress(t, o, m)
		default:
			t.Errorf("SCALING.md has a YAML block of type %T that nothing validates", obj)
		}
	}
	for _, want := range []string{"envoy", "Service", "Ingress"} {
		assert.True(t, seen[want], "SCALING.md lost its %s example", want)
	}
	require.NotNil(t, headless)
	for _, block := range envoyBlocks {
		checkEnvoy(t, block, headless)
	}
}

func checkIngress(t *testing.T, ing *networkingv1.Ingress, m manifests) {
	t.Helper()
	a := ing.Annotations
	key := a["nginx.ingress.kubernetes.io/upstream-hash-by"]
	require.NotEmpty(t, key, "the Ingress sets no affinity")
	assert.NotContains(t, key, "mcp_session_id", "initialize has no session id: see \"Why hashing on Mcp-Session-Id is not enough\"")
	assert.Equal(t, "off", a["nginx.ingress.kubernetes.io/proxy-buffering"], "SSE events must not wait in a buffer")
	for _, k := range []string{"proxy-read-timeout", "proxy-send-timeout"} {
		s, err := strconv.Atoi(a["nginx.ingress.kubernetes.io/"+k])
		require.NoError(t, err, k)
		assert.GreaterOrEqual(t, s, 3600, "%s: SSE streams and listen subscriptions stay open", k)
	}
	require.Len(t, ing.Spec.Rules, 1)
	require.NotNil(t, ing.Spec.Rules[0].HTTP)
	require.Len(t, ing.Spec.Rules[0].HTTP.Paths, 1)
	p := ing.Spec.Rules[0].HTTP.Paths[0]
	assert.Equal(t, "/mcp", p.Path)
	require.NotNil(t, p.Backend.Service)
	assert.Equal(t, m.service.Name, p.Backend.Service.Name, "the backend is deploy/k8s's Service")
	assert.Equal(t, m.service.Spec.Ports[0].Name, p.Backend.Service.Port.Name)
}

func checkEnvoy(t *testing.T, block string, headless *corev1.Service) {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(block))
	require.NoError(t, err)
	var b bootstrapv3.Bootstrap
	require.NoError(t, protojson.Unmarshal(j, &b), "the Envoy example does not decode into envoy.config.bootstrap.v3.Bootstrap")
	require.NoError(t, b.ValidateAll())

	clusters := map[string]*clusterv3.Cluster{}
	for _, c := range b.GetStaticResources().GetClusters() {
		clusters[c.GetName()] = c
	}
	envelope := false
	for _, l := range b.GetStaticResources().GetListeners() {
		for _, fc := range l.GetFilterChains() {
			for _, f := range fc.GetFilters() {
				hcm, ok := unpackValid(t, f.GetTypedConfig()).(*hcmv3.HttpConnectionManager)
				require.True(t, ok, "filter %s is not the HTTP connection manager", f.GetName())
				filters := hcm.GetHttpFilters()
				require.NotEmpty(t, filters)
				assert.Equal(t, "envoy.filters.http.router", filters[len(filters)-1].GetName(), "the router comes last")
				for _, hf := range filters {
					msg := unpackValid(t, hf.GetTypedConfig())
					ss, ok := msg.(*statefulsessionv3.StatefulSession)
					if !ok {
						continue
					}
					env, ok := unpackValid(t, ss.GetSessionState().GetTypedConfig()).(*envelopev3.EnvelopeSessionState)
					require.True(t, ok, "the session state is not the envelope extension")
					assert.Equal(t, sessionHeader, env.GetHeader().GetName())
					envelope = true
				}
				for _, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
					for _, r := range vh.GetRoutes() {
						assert.Equal(t, "/mcp", r.GetMatch().GetPath())
						c, ok := clusters[r.GetRoute().GetCluster()]
						require.True(t, ok, "route to unknown cluster %q", r.GetRoute().GetCluster())
						checkEnvoyCluster(t, c, headless)
					}
				}
			}
		}
	}
	assert.True(t, envelope, "no envelope stateful session on %s", sessionHeader)
}

func checkEnvoyCluster(t *testing.T, c *clusterv3.Cluster, headless *corev1.Service) {
	t.Helper()
	assert.Equal(t, clusterv3.Cluster_STRICT_DNS, c.GetType(), "STRICT_DNS resolves every pod of the headless Service")
	eps := c.GetLoadAssignment().GetEndpoints()
	require.Len(t, eps, 1)
	require.Len(t, eps[0].GetLbEndpoints(), 1)
	sa := eps[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	host, _, _ := strings.Cut(sa.GetAddress(), ".")
	assert.Equal(t, headless.Name, host, "the cluster resolves the headless Service")
	assert.Equal(t, uint32(headless.Spec.Ports[0].Port), sa.GetPortValue())
}

// docRefRE finds Go identifiers of the Vigil packages named in the docs.
var docRefRE = regexp.MustCompile(`\b(server|streamable)\.([A-Z][A-Za-z0-9]*)\b`)

// TestScalingDocNames checks that the Go identifiers, command-line flags and
// alerts SCALING.md names exist (the packages are parsed, not compiled, so
// that work in progress elsewhere does not break this test).
func TestScalingDocNames(t *testing.T) {
	doc := string(readRepoFile(t, scalingDoc))
	exports := map[string]map[string]bool{
		"server":     exportedNames(t, "server"),
		"streamable": exportedNames(t, "transport/streamable"),
	}
	refs := docRefRE.FindAllStringSubmatch(doc, -1)
	require.NotEmpty(t, refs)
	for _, m := range refs {
		assert.True(t, exports[m[1]][m[2]], "SCALING.md names %s.%s, which does not exist", m[1], m[2])
	}

	flags := vigilFlags(t)
	for _, flag := range regexp.MustCompile("`-([a-z][a-z-]+)`").FindAllStringSubmatch(doc, -1) {
		assert.True(t, flags[flag[1]], "SCALING.md names the flag -%s, which cmd/vigil lacks", flag[1])
	}

	alerts := map[string]bool{}
	for _, r := range loadRules(t).alerts() {
		alerts[r.Alert] = true
	}
	for _, a := range regexp.MustCompile(`\bVigil[A-Z][A-Za-z]+\b`).FindAllString(doc, -1) {
		assert.True(t, alerts[a], "SCALING.md names the alert %s, which rules.yml lacks", a)
	}
}

// exportedNames returns the exported top-level names of the package in dir
// (relative to the repository root), tests excluded.
func exportedNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(repoPath(t, dir))
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(repoPath(t, dir), e.Name()), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					out[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						out[s.Name.Name] = s.Name.IsExported()
					case *ast.ValueSpec:
						for _, n := range s.Names {
							out[n.Name] = n.IsExported()
						}
					}
				}
			}
		}
	}
	return out
}
