package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/nginxtest"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// startShared starts n vigil-everything -redis replicas on one real
// redis-server as the shared deploy kits run it (TLS only, an ACL user
// with a password: redistest.StartTLS), sharing VIGIL_REQUEST_STATE_KEY
// and VIGIL_CLUSTER_KEY as replicas behind one load balancer must, behind a real nginx doing
// round robin with no session affinity, and returns the MCP URL of the
// proxy. At the end, Redis's ACL log must be empty.
func startShared(t *testing.T, n int) string {
	t.Helper()
	redis := redistest.StartTLS(t)
	admin := redis.Client(t)
	t.Cleanup(func() { // after the replicas stopped
		entries, err := admin.Do(context.Background(), "ACL", "LOG").Slice()
		require.NoError(t, err)
		assert.Empty(t, entries, "no command, key or channel of Vigil is denied to its ACL user")
	})
	var key [32]byte
	_, _ = rand.Read(key[:])
	env := []string{
		"VIGIL_REQUEST_STATE_KEY=" + base64.StdEncoding.EncodeToString(key[:]),
		"VIGIL_CLUSTER_KEY=" + base64.StdEncoding.EncodeToString(redistest.ClusterKey()),
		"VIGIL_REDIS_URL=" + redis.URL(), "VIGIL_REDIS_PASSWORD=" + redis.Password(),
	}
	var upstreams []string
	for range n {
		u := startHTTPWith(t, env, "-http", "127.0.0.1:0", "-redis-ca", redis.CAFile())
		hostport := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
		upstreams = append(upstreams, strings.Replace(hostport, "localhost", "127.0.0.1", 1))
	}
	return nginxtest.Start(t, upstreams...).URL() + "/mcp"
}

// TestConformanceShared runs both lines of the official conformance suite,
// every scenario, through nginx round robin over three replicas whose
// sessions are shared on TLS Redis with an ACL user: each request of a session may reach any
// replica (the answer to an elicitation another replica asked, a resumed
// stream another replica stored, a task another replica runs), and every
// check must pass, as against one server.
func TestConformanceShared(t *testing.T) {
	node := conformanceNode(t)
	runConformance(t, node, startShared(t, 3))
}

// TestInteropTypeScriptShared drives the same three replicas behind nginx
// with the official TypeScript SDK client over Streamable HTTP: the
// everything script (tools of every content type, resources with a
// subscription, prompts, completion, logging levels, progress, and
// sampling, elicitation and roots round trips), each of its requests
// landing on whichever replica nginx picks.
func TestInteropTypeScriptShared(t *testing.T) {
	node := requireNodeHarness(t, interopDir)
	url := startShared(t, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	client := exec.CommandContext(ctx, node, "everything-client.mjs", url)
	client.Dir = interopDir
	client.WaitDelay = 5 * time.Second
	out, err := client.CombinedOutput()
	t.Logf("TypeScript client output:\n%s", out)
	require.NoError(t, ctx.Err(), "TypeScript client timed out:\n%s", out)
	require.NoError(t, err, "TypeScript client failed:\n%s", out)
}
