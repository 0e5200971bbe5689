package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/cmd/internal/upstreamspec"
	"github.com/vigil-mcp/vigil/gateway"
)

// TestGatewayStdioUpstream is the gateway's first end to end: vigil
// -upstream 'e=vigil-everything -stdio' serves the upstream's tools to a
// plain HTTP client, forwards a call, lists its prompts, resources and
// templates and reads a resource, serves a 2026-07-28 client's call too, logs the upstream's stderr under
// its name, and exits cleanly on SIGTERM, its upstream with it.
func TestGatewayStdioUpstream(t *testing.T) {
	everything := filepath.Join(t.TempDir(), "vigil-everything")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", everything, "../vigil-everything").CombinedOutput()
	require.NoError(t, err, "%s", out)

	svc := startService(t, "-http", "127.0.0.1:0", "-upstream", "e="+everything+" -stdio -log-level debug")
	hc := &http.Client{Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	m, err := c.rpc("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	require.NoError(t, c.notify("notifications/initialized"))

	m, err = c.rpc("2", "tools/list", `{}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	var list struct{ Tools []struct{ Name string } }
	require.NoError(t, json.Unmarshal(m.Result, &list))
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.Subset(t, names, []string{"test_simple_text", "test_tool_with_progress", "test_error_handling"})
	assert.NotContains(t, names, "echo", "the upstream's tools replace the demo tools")

	m, err = c.rpc("3", "tools/call", `{"name":"test_simple_text"}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"This is a simple text response for testing."}]}`, string(m.Result))

	for i, method := range []string{"prompts/list", "resources/list", "resources/templates/list"} {
		m, err = c.rpc(fmt.Sprint(4+i), method, `{}`)
		require.NoError(t, err)
		require.Nil(t, m.Error, method)
		assert.Greater(t, len(m.Result), 30, "%s: %s", method, m.Result)
	}
	m, err = c.rpc("7", "resources/read", `{"uri":"test://static-text"}`)
	require.NoError(t, err)
	require.Nil(t, m.Error)
	assert.Contains(t, string(m.Result), `"uri":"test://static-text"`)

	// A 2026-07-28 client (stateless) in front of the 2025 upstream.
	modern := &svcClient{hc: hc, url: svc.base + "/mcp"}
	resp, err := modern.postHeaders(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"test_simple_text","_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},`+
		`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}}}`,
		map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "test_simple_text"})
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), "This is a simple text response for testing.")

	hc.CloseIdleConnections()
	require.NoError(t, svc.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, svc.wait(15*time.Second), "exit status 0 after SIGTERM")
	assert.True(t, svc.logs.waitFor(`msg="upstream stderr" upstream=e`, 10*time.Second), "logged:\n%s", svc.logs.String())
}

func TestParseUpstreams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		targets []string
		envs    []string
		want    []gateway.Upstream
		wantErr string
	}{
		{name: "none"},
		{
			name:    "stdio and http",
			targets: []string{"fs=npx -y '@modelcontextprotocol/server-filesystem' /srv/a b", "remote=https://mcp.example.com/mcp"},
			envs:    []string{"fs=API_KEY=a=b", "fs=DEBUG=1"},
			want: []gateway.Upstream{
				{Name: "fs", Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/a", "b"}, Env: []string{"API_KEY=a=b", "DEBUG=1"}},
				{Name: "remote", URL: "https://mcp.example.com/mcp"},
			},
		},
		{name: "no name", targets: []string{"=npx"}, wantErr: "want NAME=TARGET"},
		{name: "no target", targets: []string{"e= "}, wantErr: "want NAME=TARGET"},
		{name: "twice", targets: []string{"e=a", "e=b"}, wantErr: "named twice"},
		{name: "bad quote", targets: []string{"e=run 'x"}, wantErr: "unterminated single quote"},
		{name: "env of nobody", targets: []string{"e=a"}, envs: []string{"f=K=V"}, wantErr: "for an -upstream NAME"},
		{name: "env of http", targets: []string{"e=http://127.0.0.1:1/mcp"}, envs: []string{"e=K=V"}, wantErr: "an HTTP upstream has no environment"},
		{name: "env without value", targets: []string{"e=a"}, envs: []string{"e=K"}, wantErr: "want NAME=K=V"},
		{name: "env without upstream", envs: []string{"e=K=V"}, wantErr: "for an -upstream NAME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := upstreamspec.Parse(tc.targets, tc.envs)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestUpstreamSessionFlags: -upstream-shared, -upstream-max-processes,
// -upstream-idle, -upstream-required and -upstream-start-timeout (or their
// variables) reach the gateway's configuration; -upstream-idle 0 is
// never; they need -upstream, a cap of 1 or more, upstreams' names, a
// start timeout above 0.
func TestUpstreamSessionFlags(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	cfg, err := parseConfig([]string{"-upstream", "e=run it"}, noEnv, io.Discard)
	require.NoError(t, err)
	gc := upstreamConfig(cfg, nil)
	assert.False(t, gc.Upstreams[0].Shared)
	assert.Equal(t, 32, gc.MaxProcesses)
	assert.Equal(t, 5*time.Minute, gc.IdleTimeout)
	assert.False(t, gc.DropUncheckedTools, "served unchecked by default")
	assert.Nil(t, gc.Required, "every upstream required by default")
	assert.Equal(t, 2*time.Minute, gc.StartTimeout)
	assert.Equal(t, 4<<20, gc.Upstreams[0].MaxMessageBytes)
	assert.Equal(t, int64(16<<20), gc.Upstreams[0].MaxCatalogBytes)
	assert.False(t, gc.Search, "the full list by default")

	cfg, err = parseConfig([]string{
		"-upstream", "e=run it", "-upstream", "f=run", "-upstream", "g=run",
		"-upstream-max-message", "f=1000", "-upstream-max-message", "33554432", "-upstream-max-catalog", "g=2000",
	}, noEnv, io.Discard)
	require.NoError(t, err)
	gc = upstreamConfig(cfg, nil)
	assert.Equal(t, []int{32 << 20, 1000, 32 << 20}, []int{gc.Upstreams[0].MaxMessageBytes, gc.Upstreams[1].MaxMessageBytes, gc.Upstreams[2].MaxMessageBytes},
		"NAME=BYTES for one, BYTES for the others, in any order")
	assert.Equal(t, []int64{16 << 20, 16 << 20, 2000}, []int64{gc.Upstreams[0].MaxCatalogBytes, gc.Upstreams[1].MaxCatalogBytes, gc.Upstreams[2].MaxCatalogBytes})

	cfg, err = parseConfig([]string{"-upstream", "e=run it", "-upstream", "f=http://127.0.0.1:1/mcp", "-upstream-max-processes", "4", "-upstream-idle", "0", "-upstream-unchecked-tools", "drop", "-upstream-required", "f"},
		func(k string) string {
			return map[string]string{"VIGIL_UPSTREAM_SHARED": "true", "VIGIL_UPSTREAM_START_TIMEOUT": "5s", "VIGIL_CATALOG_SEARCH": "true"}[k]
		}, io.Discard)
	require.NoError(t, err)
	gc = upstreamConfig(cfg, nil)
	assert.True(t, gc.Upstreams[0].Shared)
	assert.True(t, gc.Upstreams[1].Shared)
	assert.Equal(t, 4, gc.MaxProcesses)
	assert.Negative(t, gc.IdleTimeout, "never")
	assert.True(t, gc.DropUncheckedTools)
	assert.Equal(t, []string{"f"}, gc.Required)
	assert.Equal(t, 5*time.Second, gc.StartTimeout)
	assert.True(t, gc.Search, "-catalog-search")

	for want, args := range map[string][]string{
		"-upstream-idle, -upstream-shared: need -upstream":                                    {"-upstream-shared", "-upstream-idle", "1m"},
		"-upstream-max-processes 0: want at least 1":                                          {"-upstream", "e=run", "-upstream-max-processes", "0"},
		"-upstream-idle -1s: want 0 (never) or more":                                          {"-upstream", "e=run", "-upstream-idle", "-1s"},
		"-upstream-unchecked-tools: need -upstream":                                           {"-upstream-unchecked-tools", "drop"},
		"-catalog-search: need -upstream":                                                     {"-catalog-search"},
		`invalid value "hide" for flag -upstream-unchecked-tools: "hide": want serve or drop`: {"-upstream", "e=run", "-upstream-unchecked-tools", "hide"},
		"-upstream-required, -upstream-start-timeout: need -upstream":                         {"-upstream-required", "e", "-upstream-start-timeout", "1s"},
		`-upstream-required "e,g": g is not an -upstream NAME`:                                {"-upstream", "e=run", "-upstream-required", "e,g"},
		`-upstream-required ",": want NAME[,NAME]`:                                            {"-upstream", "e=run", "-upstream-required", ","},
		"-upstream-start-timeout 0s: want more than 0":                                        {"-upstream", "e=run", "-upstream-start-timeout", "0"},
		"-upstream-max-catalog, -upstream-max-message: need -upstream":                        {"-upstream-max-message", "5", "-upstream-max-catalog", "5"},
		`-upstream-max-message "0": want [NAME=]BYTES, BYTES from 1 to 2147483647`:            {"-upstream", "e=run", "-upstream-max-message", "0"},
		`-upstream-max-catalog "e=4MiB": want [NAME=]BYTES, BYTES from 1 to 2147483647`:       {"-upstream", "e=run", "-upstream-max-catalog", "e=4MiB"},
		`-upstream-max-message "g=5": g is not an -upstream NAME`:                             {"-upstream", "e=run", "-upstream-max-message", "g=5"},
	} {
		_, err := parseConfig(args, noEnv, io.Discard)
		require.EqualError(t, err, want)
	}
}
