package gateway_test

import (
	"encoding/json"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// TestSkillsCopied: an upstream's skills are served by the gateway's
// server, with the upstream's entries (digests and sizes), their files
// readable, and the resources listed as the upstream lists them, once.
func TestSkillsCopied(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	_, err := u.srv.AddSkills(fstest.MapFS{
		"ops/deploy/SKILL.md":       {Data: []byte("---\nname: deploy\ndescription: Ship it\n---\n# Deploy\n")},
		"ops/deploy/steps/check.sh": {Data: []byte("#!/bin/sh\nexit 0\n")},
	})
	require.NoError(t, err)
	skillsCap := map[string]any{"extensions": map[string]any{server.ExtensionSkills: map[string]any{}}}
	direct := mcptest.Connect(t, u.srv, mcptest.WithCapabilities(skillsCap))
	want, rpcErr := direct.Call("skills/list", nil)
	require.Nil(t, rpcErr)

	c := mcptest.Connect(t, frontServer(t, gateway.Upstream{Name: "a", URL: u.url}), mcptest.WithCapabilities(skillsCap))
	got, rpcErr := c.Call("skills/list", nil)
	require.Nil(t, rpcErr)
	var w, g struct{ Skills []json.RawMessage }
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal(got, &g))
	require.Len(t, g.Skills, 1)
	assert.JSONEq(t, string(w.Skills[0]), string(g.Skills[0]), "the same entry: frontmatter, files, digests and sizes")
	assert.Equal(t, "#!/bin/sh\nexit 0\n", c.ReadResource("skill://ops/deploy/steps/check.sh")[0].Text)

	uris := func(c *mcptest.Client) []string {
		var out []string
		for _, r := range c.ListResources() {
			out = append(out, r.URI)
		}
		return out
	}
	assert.ElementsMatch(t, uris(direct), uris(c), "the same resources, each once")
}
