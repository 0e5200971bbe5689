package redisshare_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/redisshare"
)

// TestOpenSentinel: a redis+sentinel:// URL reaches the primary the
// Sentinels name, and the replica is ready.
func TestOpenSentinel(t *testing.T) {
	primary := redistest.Start(t)
	sentinels := redistest.StartSentinels(t, primary, 3, 0, 5*time.Second)
	s, err := redisshare.Open(t.Context(), redisshare.Config{URL: sentinelURL(sentinels, redistest.MasterName), ClusterKey: redistest.ClusterKey()})
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Close()) }()
	assert.True(t, s.Ready())
	keys, err := primary.Client(t).Keys(t.Context(), "vigil:*").Result()
	require.NoError(t, err)
	assert.NotEmpty(t, keys, "the lease is on the primary")
}

// TestOpenRefusesTheWrongShape: a URL whose shape is not the
// deployment's is refused at start, saying what the address is and how
// to name it: the Sentinel named as a plain node started and
// never became ready.
func TestOpenRefusesTheWrongShape(t *testing.T) {
	node := redistest.Start(t)
	sentinels := redistest.StartSentinels(t, node, 1, 0, 5*time.Second)
	clusterNode := redistest.StartClusterNode(t)
	for name, tc := range map[string]struct{ url, want string }{
		"a Sentinel as a node":        {"redis://" + sentinels[0].Addr() + "/0", sentinels[0].Addr() + " is a Sentinel, not a Redis node: name the Sentinels and the master in redis+sentinel://"},
		"a Cluster node as a node":    {clusterNode.URL(), clusterNode.Addr() + " is a Redis Cluster node: name the Cluster's nodes in redis+cluster://"},
		"a node as a Sentinel":        {"redis+sentinel://" + node.Addr() + "/" + redistest.MasterName, node.Addr() + " is a standalone Redis node, not a Sentinel"},
		"a node as a Cluster seed":    {"redis+cluster://" + node.Addr(), node.Addr() + " is a standalone Redis node, not a Cluster node"},
		"a master Sentinel knows not": {"redis+sentinel://" + sentinels[0].Addr() + "/other", `knows no master named "other"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := redisshare.Open(t.Context(), redisshare.Config{URL: tc.url, ClusterKey: redistest.ClusterKey()})
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// sentinelURL is the redis+sentinel:// URL of sentinels and master.
func sentinelURL(sentinels []*redistest.Server, master string) string {
	addrs := make([]string, len(sentinels))
	for i, s := range sentinels {
		addrs[i] = s.Addr()
	}
	return "redis+sentinel://" + strings.Join(addrs, ",") + "/" + master
}

// TestOpenCluster: a redis+cluster:// URL naming one seed of a
// three-primary Cluster reaches it: the replica takes its lease and is
// ready, and the shared rate limits run on it.
func TestOpenCluster(t *testing.T) {
	nodes := redistest.StartCluster(t, 3)
	s, err := redisshare.Open(t.Context(), redisshare.Config{URL: "redis+cluster://" + nodes[1].Addr(), ClusterKey: redistest.ClusterKey()})
	require.NoError(t, err)
	defer func() { assert.NoError(t, s.Close()) }()
	assert.True(t, s.Ready())
	allowed, _, err := s.Allow(t.Context(), "caller", 10, 1)
	require.NoError(t, err)
	assert.True(t, allowed)
	var leases int
	for _, n := range nodes {
		keys, err := n.Client(t).Keys(t.Context(), "vigil:replica:*").Result()
		require.NoError(t, err)
		leases += len(keys)
	}
	assert.Equal(t, 1, leases, "the lease is on the node of its slot")
}
