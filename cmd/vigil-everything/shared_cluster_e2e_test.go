package main

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/vigil-mcp/vigil/internal/testkit/nginxtest"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

// startSharedCluster starts n vigil-everything -redis replicas on a
// 6-node Redis Cluster (3 primaries, 3 replicas: redis-cli --cluster
// create, on loopback), behind a real nginx doing round robin with no
// session affinity, and returns the MCP URL of the proxy.
func startSharedCluster(t *testing.T, n int) string {
	t.Helper()
	nodes := redistest.StartClusterWithReplicas(t, 3, 1)
	seeds := make([]string, len(nodes))
	for i, node := range nodes {
		seeds[i] = node.Addr()
	}
	var key [32]byte
	_, _ = rand.Read(key[:])
	env := []string{
		"VIGIL_REQUEST_STATE_KEY=" + base64.StdEncoding.EncodeToString(key[:]),
		"VIGIL_CLUSTER_KEY=" + base64.StdEncoding.EncodeToString(redistest.ClusterKey()),
		"VIGIL_REDIS_URL=redis+cluster://" + strings.Join(seeds, ","),
	}
	var upstreams []string
	for range n {
		u := startHTTPWith(t, env, "-http", "127.0.0.1:0")
		hostport := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
		upstreams = append(upstreams, strings.Replace(hostport, "localhost", "127.0.0.1", 1))
	}
	return nginxtest.Start(t, upstreams...).URL() + "/mcp"
}

// TestConformanceSharedCluster runs both lines of the official
// conformance suite, every scenario, through nginx round robin over three
// replicas sharing their sessions on a 6-node Redis Cluster: every check
// must pass, as with one Redis (TestConformanceShared), although a
// session's keys and channel are on any of the three primaries.
func TestConformanceSharedCluster(t *testing.T) {
	node := conformanceNode(t)
	runConformance(t, node, startSharedCluster(t, 3))
}
