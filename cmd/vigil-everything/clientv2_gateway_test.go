package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestInteropTypeScriptV2ThroughGateway runs the TypeScript SDK v2 feature
// script against vigil -upstream in front of vigil-everything, over HTTP
// (e=http://127.0.0.1:PORT/mcp) and over stdio (e='vigil-everything
// -stdio', a process per session), in both eras: every check of every module (core:
// tools, errors, logging, progress, sampling, elicitation and roots,
// resources, subscriptions, prompts, completion, cancellation, tasks; MCP
// Apps; skills, the unlisted dynamic one included).
func TestInteropTypeScriptV2ThroughGateway(t *testing.T) {
	node := requireNodeHarness(t, clientV2Dir)
	vigil := buildVigil(t)
	upstream := strings.Replace(startHTTP(t), "localhost", "127.0.0.1", 1)
	for _, hop := range []struct{ name, upstream string }{
		{"http", "e=" + upstream},
		{"stdio", "e=" + everythingBin + " -stdio"},
	} {
		t.Run(hop.name, func(t *testing.T) {
			url := startServing(t, vigil, nil, "-http", "127.0.0.1:0", "-upstream", hop.upstream)
			for _, era := range []string{"legacy", "modern"} {
				// The upstream's test_trigger_tool_change re-registers a tool
				// as it was: the gateway lists the upstream again, finds its
				// catalog unchanged, and tells the caller nothing (a caller is
				// told list_changed only when what it lists changed; the
				// gateway's own tests, TestOwnSessionStormTellsNothing, check
				// that a real change is told once).
				t.Run(era, func(t *testing.T) {
					runClientV2(t, node, url, era, "CLIENTV2_SKIP=list_changed (2025 session stream)")
				})
			}
		})
	}
}

// runClientV2 runs the TypeScript SDK v2 feature script against url in
// era (legacy or modern) and fails t when one of its checks fails.
func runClientV2(t *testing.T, node, url, era string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client-v2.mjs", url, era)
	cmd.Dir = clientV2Dir
	cmd.Env = append(append(os.Environ(), "CLIENTV2_SERVER=vigil"), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("client-v2.mjs output:\n%s", out)
	require.NoError(t, ctx.Err(), "client-v2.mjs timed out")
	require.NoError(t, err, "client-v2.mjs failed")
}
