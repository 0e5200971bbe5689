package validate

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestChartRefusesBrokenValues: values.schema.json and the chart's checks
// refuse a broken values file with a message naming the fault, at
// `helm template` (and install) time, before anything reaches a cluster.
func TestChartRefusesBrokenValues(t *testing.T) {
	gateway := "mode: gateway\ngateway: {upstreams: [{name: e, target: npx -y @modelcontextprotocol/server-everything}]}\n"
	tests := []struct{ name, values, want string }{
		{"unknown key", "replicas: 3\n", "replicas"},
		{"wrong type", "replicaCount: three\n", "replicaCount"},
		{"unknown mode", "mode: sidecar\n", "mode"},
		{"secret in clear", "extraEnv: [{name: VIGIL_CLUSTER_KEY, value: hunter2}]\n", "extraEnv"},
		{"password in the Redis URL", "redis: {url: 'rediss://vigil:hunter2@redis:6379/0', existingSecret: s}\n", "url"},
		{"Redis without its Secret", "redis: {url: 'rediss://vigil@redis:6379/0'}\n", "redis.existingSecret"},
		{"privilege escalation", "securityContext: {allowPrivilegeEscalation: true, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}\n", "allowPrivilegeEscalation"},
		{"a capability added", "securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL], add: [SYS_ADMIN]}}\n", "add"},
		{"root", "podSecurityContext: {runAsNonRoot: false}\n", "runAsNonRoot"},
		{"egress to everything", "networkPolicy: {otlpCollectorCIDR: 0.0.0.0/0}\n", "otlpCollectorCIDR"},
		{"no authorization", "auth: {issuer: ''}\n", "auth.issuer"},
		{"http issuer", "auth: {issuer: 'http://auth.example.com'}\n", "issuer"},
		{"two autoscalers", "autoscaling: {keda: {enabled: true}}\n", "exclusive"},
		{"scale-down faster than the drain", "autoscaling: {hpa: {enabled: false}, keda: {enabled: true, scaleDownStabilizationSeconds: 10}}\n", "scaleDownStabilizationSeconds"},
		{"gateway without upstreams", "mode: gateway\n", "gateway.upstreams"},
		{"upstreams in service mode", "gateway: {upstreams: [{name: e, target: mcp-server-everything}]}\n", "mode: gateway"},
		{"sandbox under RuntimeDefault", gateway + "sandbox: {boundary: vigil, seccompProfile: {type: RuntimeDefault}}\n", "RuntimeDefault"},
		{"Localhost seccomp without its profile", gateway + "sandbox: {boundary: vigil, seccompProfile: {type: Localhost}}\n", "localhostProfile"},
		{"bad sandbox profile", "mode: gateway\ngateway: {upstreams: [{name: e, target: x, sandbox: jail}]}\n", "sandbox"},
		{"header in clear", "mode: gateway\ngateway: {upstreams: [{name: e, target: 'https://x/mcp', headers: [{name: Authorization, value: Bearer x}]}]}\n", "value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vals map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tt.values), &vals))
			_, err := renderChart(t, "vigil", vals)
			require.Error(t, err, "the chart accepts %q", tt.values)
			assert.Contains(t, err.Error(), tt.want)
		})
	}

	// And accepts each of them corrected: the refusals are the faults'.
	for _, ok := range []string{
		gateway,
		gateway + "sandbox: {boundary: vigil, seccompProfile: {type: Localhost, localhostProfile: profiles/userns.json}, appArmorProfile: {type: Unconfined}}\n",
		"redis: {url: 'rediss://vigil@redis:6379/0', existingSecret: vigil-shared}\n",
		"autoscaling: {hpa: {enabled: false}, keda: {enabled: true}}\n",
		"auth: {allowUnauthenticated: true, issuer: ''}\n",
	} {
		var vals map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(ok), &vals))
		_, err := renderChart(t, "vigil", maps.Clone(vals))
		assert.NoError(t, err, "%s", ok)
	}
}

// TestChartSandboxFlags: which -upstream-sandbox the chart gives each
// upstream, by sandbox.boundary: off for a stdio upstream with the pod as
// its boundary, nothing for an HTTP upstream (no process), the upstream's
// own profile when it names one, and nothing when the catalog names one
// (vigil refuses a profile given both ways).
func TestChartSandboxFlags(t *testing.T) {
	upstreams := `
mode: gateway
gateway:
  upstreams:
    - {name: plain, target: mcp-server-everything stdio}
    - {name: remote, target: 'https://mcp.example.com/mcp'}
    - {name: own, target: npx -y @modelcontextprotocol/server-memory, sandbox: 'none,write=/tmp/memory'}
    - {name: cat, target: npx -y @modelcontextprotocol/server-everything}
  catalog:
    upstreams:
      cat: {sandbox: 'none,net=registry.npmjs.org:443'}
`
	for _, tt := range []struct {
		boundary string
		want     []string
	}{
		{"sandbox: {boundary: pod}\n", []string{"plain=off", "own=none,write=/tmp/memory"}},
		{"sandbox: {boundary: vigil, seccompProfile: {type: Unconfined}}\n", []string{"own=none,write=/tmp/memory"}},
	} {
		var vals map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(upstreams+tt.boundary), &vals))
		r := mustRender(t, "vigil", vals)
		var got []string
		for _, doc := range r.docs {
			if kind, _ := kindOf(t, doc); kind != "Deployment" {
				continue
			}
			var d struct {
				Spec struct {
					Template struct {
						Spec struct {
							Containers []struct {
								Args []string `json:"args"`
							} `json:"containers"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(doc), &d))
			args := d.Spec.Template.Spec.Containers[0].Args
			for i, a := range args {
				if a == "-upstream-sandbox" {
					got = append(got, args[i+1])
				}
			}
		}
		assert.Equal(t, tt.want, got, "%s", tt.boundary)
	}
}
