package validate

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
)

const (
	composeFile           = "deploy/compose.yaml"
	prometheusConfigFile  = "deploy/prometheus/prometheus.yml"
	grafanaDatasourceFile = "deploy/grafana/provisioning/datasources/datasources.yaml"
	grafanaProviderFile   = "deploy/grafana/provisioning/dashboards/dashboards.yaml"
	// vigilPort is the port the image listens on (ENTRYPOINT -http 0.0.0.0:8080).
	vigilPort = 8080
	// adminPort is the port of vigil's admin listener (VIGIL_ADMIN_HTTP) in
	// compose and Kubernetes: metrics, health and the debug page.
	adminPort = 9090
)

// loadCompose loads deploy/compose.yaml with compose-go, the loader docker
// compose itself uses: it validates the file against the Compose
// Specification schema and resolves relative paths against deploy/.
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{repoPath(t, composeFile)},
		cli.WithWorkingDirectory(repoPath(t, "deploy")),
		cli.WithName("vigil"),
		cli.WithResolvedPaths(true),
		cli.WithInterpolation(true),
	)
	require.NoError(t, err)
	p, err := opts.LoadProject(t.Context())
	require.NoError(t, err, composeFile)
	return p
}

func composeService(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	require.NoError(t, err)
	return s
}

// mountSource returns the host path mounted at target in service s.
func mountSource(t *testing.T, s types.ServiceConfig, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Target == target {
			return v.Source
		}
	}
	t.Fatalf("service %s mounts nothing at %s", s.Name, target)
	return ""
}

// mountTarget returns where service s mounts the repository file rel.
func mountTarget(t *testing.T, s types.ServiceConfig, rel string) string {
	t.Helper()
	want := repoPath(t, rel)
	for _, v := range s.Volumes {
		if v.Source == want {
			return v.Target
		}
	}
	t.Fatalf("service %s does not mount %s", s.Name, rel)
	return ""
}

// TestComposeFilesExist checks that every file compose builds from or
// mounts exists, and that the mounts are read-only.
func TestComposeFilesExist(t *testing.T) {
	p := loadCompose(t)
	assert.ElementsMatch(t, []string{"vigil", "prometheus", "jaeger", "grafana"}, p.ServiceNames())
	for _, s := range p.Services {
		if s.Build != nil {
			assert.FileExists(t, filepath.Join(s.Build.Context, "go.mod"), "service %s: the build context is not the repository root", s.Name)
			assert.FileExists(t, filepath.Join(s.Build.Context, s.Build.Dockerfile), "service %s: Dockerfile", s.Name)
		}
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("service %s mounts %s: %v", s.Name, v.Source, err)
			}
			assert.True(t, v.ReadOnly, "service %s: mount %s should be read-only", s.Name, v.Target)
		}
	}
}

func TestComposeServices(t *testing.T) {
	p := loadCompose(t)

	vigil := composeService(t, p, "vigil")
	require.NotNil(t, vigil.Build)
	assert.Equal(t, repoRoot(t), vigil.Build.Context)
	assert.Equal(t, "deploy/Dockerfile", vigil.Build.Dockerfile)
	env := vigil.Environment.RemoveEmpty()
	if assert.NotNil(t, env["OTEL_EXPORTER_OTLP_ENDPOINT"]) {
		assert.Equal(t, "http://jaeger:4318", *env["OTEL_EXPORTER_OTLP_ENDPOINT"])
	}
	assert.True(t, slices.ContainsFunc(vigil.Ports, func(pc types.ServicePortConfig) bool { return pc.Target == vigilPort }),
		"vigil publishes port %d", vigilPort)
	assert.True(t, vigil.ReadOnly)
	assert.Equal(t, []string{"ALL"}, vigil.CapDrop)
	vars := map[string]string{}
	for k, v := range env {
		vars[k] = *v
	}
	checkVigilEnv(t, "compose", vars)
	assert.Equal(t, fmt.Sprintf(":%d", adminPort), vars["VIGIL_ADMIN_HTTP"], "the admin port Prometheus scrapes")
	for _, pc := range vigil.Ports {
		if vars["VIGIL_ALLOW_UNAUTHENTICATED"] == "true" {
			assert.Equal(t, "127.0.0.1", pc.HostIP, "port %d: an open /mcp is published on the host's loopback only", pc.Target)
		}
	}

	prom := composeService(t, p, "prometheus")
	assert.True(t, strings.HasPrefix(prom.Image, "prom/prometheus:v3."), prom.Image)
	assert.Contains(t, prom.Command, "--enable-feature=exemplar-storage")
	configTarget := mountTarget(t, prom, prometheusConfigFile)
	assert.Contains(t, prom.Command, "--config.file="+configTarget)

	jaeger := composeService(t, p, "jaeger")
	assert.True(t, strings.HasPrefix(jaeger.Image, "jaegertracing/jaeger:2."), jaeger.Image)
	for _, port := range []uint32{4318, 16686} {
		assert.True(t, slices.ContainsFunc(jaeger.Ports, func(pc types.ServicePortConfig) bool { return pc.Target == port }),
			"jaeger publishes port %d", port)
	}

	grafana := composeService(t, p, "grafana")
	assert.True(t, strings.HasPrefix(grafana.Image, "grafana/grafana:"), grafana.Image)
	assert.Equal(t, repoPath(t, "deploy/grafana/provisioning"), mountSource(t, grafana, "/etc/grafana/provisioning"))
}

// prometheusConfig is the part of prometheus.yml these checks read.
type prometheusConfig struct {
	RuleFiles     []string `json:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `json:"job_name"`
		MetricsPath   string `json:"metrics_path"`
		StaticConfigs []struct {
			Targets []string `json:"targets"`
		} `json:"static_configs"`
	} `json:"scrape_configs"`
}

// TestPrometheusConfig has promtool check prometheus.yml, then checks that
// it scrapes the vigil service on /metrics as job vigil (the job the alerts
// name) and that its rule_files pick up the rules compose mounts.
func TestPrometheusConfig(t *testing.T) {
	out, err := promtool(t, repoRoot(t), "check", "config", "--syntax-only", filepath.FromSlash(prometheusConfigFile))
	require.NoError(t, err, out)

	var cfg prometheusConfig
	require.NoError(t, yaml.Unmarshal(readRepoFile(t, prometheusConfigFile), &cfg))
	p := loadCompose(t)
	found := false
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName != "vigil" {
			continue
		}
		found = true
		assert.Equal(t, "/metrics", sc.MetricsPath)
		require.Len(t, sc.StaticConfigs, 1)
		assert.Equal(t, []string{fmt.Sprintf("vigil:%d", adminPort)}, sc.StaticConfigs[0].Targets, "the admin port: the MCP port serves only /mcp")
	}
	assert.True(t, found, "no scrape job named vigil")

	rulesTarget := mountTarget(t, composeService(t, p, "prometheus"), rulesFile)
	matched := false
	for _, glob := range cfg.RuleFiles {
		ok, err := path.Match(glob, rulesTarget)
		require.NoError(t, err)
		matched = matched || ok
	}
	assert.True(t, matched, "rule_files %v do not load %s, where compose mounts %s", cfg.RuleFiles, rulesTarget, rulesFile)
}

// grafanaDatasource is one provisioned Grafana data source.
type grafanaDatasource struct {
	Name      string         `json:"name"`
	UID       string         `json:"uid"`
	Type      string         `json:"type"`
	Access    string         `json:"access"`
	URL       string         `json:"url"`
	IsDefault bool           `json:"isDefault"`
	Editable  bool           `json:"editable"`
	JSONData  map[string]any `json:"jsonData,omitempty"`
}

func provisionedDatasources(t *testing.T) []grafanaDatasource {
	t.Helper()
	var f struct {
		APIVersion  int                 `json:"apiVersion"`
		Datasources []grafanaDatasource `json:"datasources"`
	}
	require.NoError(t, yaml.UnmarshalStrict(readRepoFile(t, grafanaDatasourceFile), &f), grafanaDatasourceFile)
	require.Equal(t, 1, f.APIVersion)
	return f.Datasources
}

// provisionedDatasource returns the provisioned data source of type typ.
func provisionedDatasource(t *testing.T, typ string) grafanaDatasource {
	t.Helper()
	for _, ds := range provisionedDatasources(t) {
		if ds.Type == typ {
			return ds
		}
	}
	t.Fatalf("no %s data source in %s", typ, grafanaDatasourceFile)
	return grafanaDatasource{}
}

// TestGrafanaProvisioning checks the data sources (Prometheus with an
// exemplar link on trace_id to Jaeger) and the dashboard provider (it loads
// the directory where compose mounts vigil.json).
func TestGrafanaProvisioning(t *testing.T) {
	p := loadCompose(t)
	prom := provisionedDatasource(t, "prometheus")
	jaeger := provisionedDatasource(t, "jaeger")
	assert.Equal(t, "http://prometheus:9090", prom.URL)
	assert.Equal(t, "http://jaeger:16686", jaeger.URL)
	assert.True(t, prom.IsDefault)

	links, ok := prom.JSONData["exemplarTraceIdDestinations"].([]any)
	require.True(t, ok, "the Prometheus data source links no exemplar to traces")
	require.Len(t, links, 1)
	link := links[0].(map[string]any)
	assert.Equal(t, mcpconv.ExemplarTraceID, link["name"], "the exemplar label the telemetry package sets")
	assert.Equal(t, jaeger.UID, link["datasourceUid"])

	var providers struct {
		APIVersion int `json:"apiVersion"`
		Providers  []struct {
			Name                  string `json:"name"`
			OrgID                 int    `json:"orgId"`
			Folder                string `json:"folder"`
			Type                  string `json:"type"`
			DisableDeletion       bool   `json:"disableDeletion"`
			AllowUIUpdates        bool   `json:"allowUiUpdates"`
			UpdateIntervalSeconds int    `json:"updateIntervalSeconds"`
			Options               struct {
				Path                      string `json:"path"`
				FoldersFromFilesStructure bool   `json:"foldersFromFilesStructure"`
			} `json:"options"`
		} `json:"providers"`
	}
	require.NoError(t, yaml.UnmarshalStrict(readRepoFile(t, grafanaProviderFile), &providers), grafanaProviderFile)
	require.Len(t, providers.Providers, 1)
	assert.Equal(t, "file", providers.Providers[0].Type)
	dashTarget := mountTarget(t, composeService(t, p, "grafana"), dashboardFile)
	assert.Equal(t, providers.Providers[0].Options.Path, path.Dir(dashTarget),
		"the provider loads %s, compose mounts the dashboard at %s", providers.Providers[0].Options.Path, dashTarget)
}
