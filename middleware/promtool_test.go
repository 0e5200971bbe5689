package middleware_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
)

// TestPromtoolCheckMetrics serves the registry on /metrics as cmd/vigil does,
// after a session with traffic, and runs `promtool check metrics` on the
// exposition. Without promtool the test skips, except in CI (CI=true), where
// it fails: install it with `apt-get install -y prometheus`.
func TestPromtoolCheckMetrics(t *testing.T) {
	testkit.External(t, "promtool")
	testkit.Watchdog(t)
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not on PATH; CI must install it (apt-get install -y prometheus)")
		}
		t.Skip("promtool is not on PATH")
	}

	r := newRig(t, nil).start(nil)
	r.Initialize("", nil)
	r.SendCallTool(2, "echo", nil)
	require.Nil(t, r.RecvResponseTo(2).Error)
	r.SendCallTool(3, "no-such-tool", nil)
	require.NotNil(t, r.RecvResponseTo(3).Error)
	r.close()

	problems, err := testutil.GatherAndLint(r.reg)
	require.NoError(t, err)
	assert.Empty(t, problems)

	hs := httptest.NewServer(promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	defer hs.Close()
	resp, err := http.Get(hs.URL + "/metrics") //nolint:noctx // test against a local server
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), `mcp_server_requests_finished_total{error_type="",gen_ai_tool_name="echo",mcp_method_name="tools/call",outcome="ok",rpc_response_status_code=""} 1`)

	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s", out)
	assert.Empty(t, string(out), "promtool reported problems")
}
