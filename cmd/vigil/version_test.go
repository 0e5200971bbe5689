package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/release"
)

// TestVersionFlag: -version is no error of the configuration but a request
// main answers, even when the environment holds a bad value, which the
// same command without -version refuses.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	bad := func(k string) string { return map[string]string{"VIGIL_SHUTDOWN_GRACE": "soon"}[k] }
	var out bytes.Buffer
	_, err := parseConfig([]string{"-version"}, bad, &out)
	require.ErrorIs(t, err, errVersion)
	_, err = parseConfig([]string{"-version", "-max-body", "0"}, func(string) string { return "" }, &out)
	require.ErrorIs(t, err, errVersion, "-version is answered before the flags are checked")
	_, err = parseConfig(nil, bad, &out)
	require.ErrorContains(t, err, `VIGIL_SHUTDOWN_GRACE="soon"`)
	assert.Empty(t, out.String())
}

// TestVersionE2E builds vigil as a release does, its version set with
// -ldflags -X: vigil -version prints one line on standard output and exits
// 0, whatever VIGIL_* holds, and serving, vigil reports the same version in
// serverInfo and on /debug/vigil. A build without -X reports the version
// in the source (internal/release), whatever tags the clone holds.
func TestVersionE2E(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a binary")
	}
	released := filepath.Join(t.TempDir(), "vigil")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-ldflags", "-X main.version=v0.1.0", "-o", released, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	plain := filepath.Join(t.TempDir(), "vigil")
	out, err = exec.CommandContext(t.Context(), "go", "build", "-o", plain, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, tt := range []struct {
		bin, prefix string
	}{
		{bin: released, prefix: "vigil v0.1.0 ("},
		{bin: vigilBin, prefix: "vigil dev ("},                  // TestMain's
		{bin: plain, prefix: "vigil " + release.Version + " ("}, // the source's, tags or none
	} {
		cmd := exec.CommandContext(t.Context(), tt.bin, "-version")
		cmd.Env = append(cmd.Environ(), "VIGIL_MAX_BODY=big", "VIGIL_VERSION=x")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		require.NoError(t, err, "%s -version: %s", tt.bin, stderr.String())
		assert.Empty(t, stderr.String())
		line := string(stdout)
		assert.True(t, strings.HasPrefix(line, tt.prefix), "%q does not start with %q", line, tt.prefix)
		assert.True(t, strings.HasSuffix(line, " "+runtime.GOOS+"/"+runtime.GOARCH+")\n"), "%q", line)
		assert.Equal(t, 1, strings.Count(line, "\n"), "%q", line)
	}

	// Serving, the release reports its version to clients and on its page.
	svc := startBinary(t, released, "-http", "127.0.0.1:0")
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	c := &svcClient{hc: hc, url: svc.base + "/mcp"}
	m, err := c.rpc(`1`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"version-test","version":"1"}}`)
	require.NoError(t, err)
	var init struct {
		ServerInfo struct{ Name, Version string } `json:"serverInfo"`
	}
	require.NoError(t, json.Unmarshal(m.Result, &init))
	assert.Equal(t, "vigil", init.ServerInfo.Name)
	assert.Equal(t, "v0.1.0", init.ServerInfo.Version, "serverInfo")
	page := svcGet(t, hc, svc.base+"/debug/vigil?format=json", http.StatusOK)
	var snap struct{ Version string }
	require.NoError(t, json.Unmarshal([]byte(page), &snap))
	assert.Equal(t, "v0.1.0", snap.Version, "/debug/vigil")
	html := svcGet(t, hc, svc.base+"/debug/vigil", http.StatusOK)
	assert.Contains(t, html, "<title>vigil v0.1.0</title>", "the live page's title names the service")
}
