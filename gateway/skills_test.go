package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestUnlistedSkillsFound: skills an upstream serves but does not list,
// dynamic or with files, are served once a client names one: skills/get
// gives the upstream's entry, and the files read are the upstream's,
// a dynamic SKILL.md with its frontmatter once.
func TestUnlistedSkillsFound(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	require.NoError(t, u.srv.AddSkill(server.Skill{
		Path: "reports/daily", Frontmatter: "name: daily\ndescription: Today's report", Unlisted: true,
		Generate: func(_ context.Context, file string) ([]byte, error) {
			switch file {
			case "SKILL.md":
				return []byte("# Daily\n"), nil
			case "data/today.csv":
				return []byte("day,n\n"), nil
			}
			return nil, server.ErrResourceNotFound
		},
	}))
	require.NoError(t, u.srv.AddSkill(server.Skill{
		Path: "hidden/sauce", Unlisted: true,
		FS: fstest.MapFS{"SKILL.md": {Data: []byte("---\nname: sauce\ndescription: Not listed\n---\nsecret\n")}, "recipe.txt": {Data: []byte("salt\n")}},
	}))
	skillsCap := map[string]any{"extensions": map[string]any{server.ExtensionSkills: map[string]any{}}}
	direct := mcptest.Connect(t, u.srv, mcptest.WithCapabilities(skillsCap))
	c := mcptest.Connect(t, frontServer(t, gateway.Upstream{Name: "a", URL: u.url}), mcptest.WithCapabilities(skillsCap))

	for _, uri := range []string{"skill://reports/daily/SKILL.md", "skill://hidden/sauce/SKILL.md"} {
		want, rpcErr := direct.Call("skills/get", map[string]string{"uri": uri})
		require.Nil(t, rpcErr)
		got, rpcErr := c.Call("skills/get", map[string]string{"uri": uri})
		require.Nil(t, rpcErr, "%s", uri)
		var w, g struct{ Skill json.RawMessage }
		require.NoError(t, json.Unmarshal(want, &w))
		require.NoError(t, json.Unmarshal(got, &g))
		assert.JSONEq(t, string(w.Skill), string(g.Skill), "%s: the upstream's entry", uri)
		assert.Equal(t, direct.ReadResource(uri)[0].Text, c.ReadResource(uri)[0].Text, "%s: its SKILL.md", uri)
	}
	assert.Equal(t, "day,n\n", c.ReadResource("skill://reports/daily/data/today.csv")[0].Text)
	assert.Equal(t, "salt\n", c.ReadResource("skill://hidden/sauce/recipe.txt")[0].Text)
	_, rpcErr := c.Call("skills/get", map[string]string{"uri": "skill://nowhere/SKILL.md"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(-32602), rpcErr.Code)
}

// TestSkillsCopyBounded: an upstream whose skills hold more than 1,000
// files in all is not served, failing, and the log says why; Mount
// itself does not fail.
func TestSkillsCopyBounded(t *testing.T) {
	testkit.Watchdog(t)
	u := startUpstream(t, "a")
	for _, name := range []string{"one", "two"} {
		fsys := fstest.MapFS{"SKILL.md": {Data: []byte("---\nname: " + name + "\ndescription: Many files\n---\n")}}
		for i := range 500 {
			fsys[fmt.Sprintf("f/%04d.txt", i)] = &fstest.MapFile{Data: []byte("x")}
		}
		require.NoError(t, u.srv.AddSkill(server.Skill{Path: name, FS: fsys}))
	}
	log, records := recordLogger()
	srv, g := mountWith(t, gateway.Config{Upstreams: []gateway.Upstream{{Name: "a", URL: u.url}}, Logger: log})
	assert.Equal(t, gateway.StateFailing, g.Upstreams()[0].State)
	assert.Empty(t, srv.ToolNames())
	assert.Contains(t, <-records, "skills over 1000 files")
}
