package validate

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/cmdline"
)

const (
	composeGatewayFile = "deploy/compose.gateway.yaml"
	dockerfileGateway  = "deploy/Dockerfile.gateway"
)

// pinnedNPMRE is the npm package the gateway image installs, at an exact
// version.
var pinnedNPMRE = regexp.MustCompile(`npm install [^\n]*@modelcontextprotocol/server-everything@(\d+\.\d+\.\d+)\b`)

// loadGatewayCompose loads compose.yaml with compose.gateway.yaml over it,
// as its header says to run them.
func loadGatewayCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{repoPath(t, composeFile), repoPath(t, composeGatewayFile)},
		cli.WithWorkingDirectory(repoPath(t, "deploy")),
		cli.WithName("vigil"),
		cli.WithResolvedPaths(true),
		cli.WithInterpolation(true),
	)
	require.NoError(t, err)
	p, err := opts.LoadProject(t.Context())
	require.NoError(t, err, composeGatewayFile)
	return p
}

// TestComposeGateway: the gateway variant changes only vigil, which builds
// Dockerfile.gateway and fronts server-everything, installed there at a
// pinned version, as a stdio upstream; the merged project is as hardened
// as compose.yaml, and the Dockerfile's images are pinned by digest and
// run as a numeric non-root user.
func TestComposeGateway(t *testing.T) {
	p := loadGatewayCompose(t)
	assert.ElementsMatch(t, []string{"vigil", "prometheus", "jaeger", "grafana"}, p.ServiceNames())
	require.NoError(t, checkComposeHardening(p))
	s := composeService(t, p, "vigil")
	require.NotNil(t, s.Build)
	assert.Equal(t, dockerfileGateway, s.Build.Dockerfile)
	assert.FileExists(t, filepath.Join(s.Build.Context, "go.mod"))
	assert.FileExists(t, filepath.Join(s.Build.Context, dockerfileGateway))
	assert.FileExists(t, filepath.Join(s.Build.Context, dockerfileGateway+".dockerignore"))
	assert.True(t, s.ReadOnly, "the root file system stays read-only")

	// The upstream: -upstream NAME=TARGET, its program installed by the
	// Dockerfile at a pinned version.
	i := slices.Index(s.Command, "-upstream")
	require.GreaterOrEqual(t, i, 0, "vigil's command has -upstream: %q", s.Command)
	require.Greater(t, len(s.Command), i+1)
	name, target, ok := strings.Cut(s.Command[i+1], "=")
	require.True(t, ok, "-upstream %s: want NAME=TARGET", s.Command[i+1])
	assert.Equal(t, "everything", name)
	argv, err := cmdline.Split(target)
	require.NoError(t, err)
	assert.Equal(t, []string{"mcp-server-everything", "stdio"}, argv)

	src := readRepoFile(t, dockerfileGateway)
	m := pinnedNPMRE.FindSubmatch(src)
	require.NotNil(t, m, "%s installs server-everything at an exact version", dockerfileGateway)
	assert.Contains(t, string(readRepoFile(t, "docs/gateway.md")), "server-everything@"+string(m[1]), "docs/gateway.md names the version the deploy kit pins")
	stages := map[string]bool{}
	user := ""
	for _, in := range parseDockerfile(t, src) {
		switch in.cmd {
		case "FROM":
			fields := strings.Fields(in.args)
			for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
				fields = fields[1:] // --platform=...
			}
			if !stages[strings.ToLower(fields[0])] {
				assert.Empty(t, checkPinned(fields[0]), "FROM %s", fields[0])
			}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				stages[strings.ToLower(fields[2])] = true
			}
			user = ""
		case "USER":
			user = in.args
		}
	}
	assert.Regexp(t, `^[1-9][0-9]*:[1-9][0-9]*$`, user, "the final stage runs as a numeric non-root user")
}
