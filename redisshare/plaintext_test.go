package redisshare_test

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/redisshare"
)

// TestSentinelNamingAPrimaryElsewhere (issue 77, V3): a Sentinel on
// loopback, reached with redis+sentinel:// (no TLS), names its primary by
// a host name (announce-hostnames), as a Sentinel of a primary on another
// host does. The replica refuses to connect to it in plain text: Open
// fails saying why, the refusal is logged and counted, and the primary
// receives no connection, so no byte of the password leaves in clear
// (before, the replica sent HELLO 3 AUTH default <password> to whatever
// address the Sentinel named). The name maps to 127.0.0.1 here, so that
// nothing would leave the machine even if the rule failed. With
// AllowPlaintext the same Sentinel's primary is reached.
func TestSentinelNamingAPrimaryElsewhere(t *testing.T) {
	host := redistest.LoopbackHostname(t)
	primary := redistest.Start(t)
	sentinel := redistest.StartSentinelNaming(t, primary, host)
	_, port, _ := net.SplitHostPort(primary.Addr())
	named := net.JoinHostPort(host, port)
	url := "redis+sentinel://" + sentinel.Addr() + "/" + redistest.MasterName
	const secret = "s3cr3t-Pa55-V3"

	admin := primary.Client(t)
	require.NoError(t, admin.ConfigResetStat(t.Context()).Err())
	before := connectionsReceived(t, admin.Info(t.Context(), "stats").Val())

	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	_, err := redisshare.Open(t.Context(), redisshare.Config{
		URL: url, Password: secret, ClusterKey: redistest.ClusterKey(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Registerer: reg,
	})
	require.ErrorContains(t, err, "refused to connect to "+named+" without TLS", "a misconfiguration: refused at start")
	assert.NotContains(t, err.Error(), secret)
	assert.Contains(t, logs.String(), "refused a Redis connection without TLS")
	assert.Contains(t, logs.String(), "addr="+named)
	assert.NotContains(t, logs.String(), secret)
	assert.GreaterOrEqual(t, counterValue(t, reg, mcpconv.MetricRedisConnectionsRefused), 1.0, "counted")
	after := connectionsReceived(t, admin.Info(t.Context(), "stats").Val())
	assert.Equal(t, before, after, "the primary received no connection from the replica")

	s, err := redisshare.Open(t.Context(), redisshare.Config{URL: url, Password: secret, AllowPlaintext: true, ClusterKey: redistest.ClusterKey()})
	require.NoError(t, err, "-redis-insecure-plaintext: the named primary is reached")
	assert.True(t, s.Ready())
	require.NoError(t, s.Close())
}

// TestClusterNamingNodesElsewhere: a Cluster whose nodes announce a host
// name (cluster-announce-hostname, cluster-preferred-endpoint-type
// hostname), reached from a loopback seed without TLS: the nodes CLUSTER
// SLOTS names are refused as the Sentinel's primary is.
func TestClusterNamingNodesElsewhere(t *testing.T) {
	host := redistest.LoopbackHostname(t)
	nodes := redistest.StartCluster(t, 3)
	for _, n := range nodes {
		c := n.Client(t)
		require.NoError(t, c.ConfigSet(t.Context(), "cluster-announce-hostname", host).Err())
		require.NoError(t, c.ConfigSet(t.Context(), "cluster-preferred-endpoint-type", "hostname").Err())
	}
	require.Eventually(t, func() bool {
		slots, err := nodes[0].Client(t).ClusterSlots(t.Context()).Result() //nolint:staticcheck // CLUSTER SLOTS is what the client learns nodes from
		if err != nil || len(slots) == 0 {
			return false
		}
		for _, sl := range slots {
			for _, n := range sl.Nodes {
				if !strings.HasPrefix(n.Addr, host+":") {
					return false
				}
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond, "CLUSTER SLOTS names the nodes by %s", host)

	reg := prometheus.NewRegistry()
	_, err := redisshare.Open(t.Context(), redisshare.Config{URL: "redis+cluster://" + nodes[0].Addr(), ClusterKey: redistest.ClusterKey(), Registerer: reg})
	require.ErrorContains(t, err, "refused to connect to "+host+":")
	assert.GreaterOrEqual(t, counterValue(t, reg, mcpconv.MetricRedisConnectionsRefused), 1.0)
}

// connectionsReceived is INFO stats' total_connections_received.
func connectionsReceived(t *testing.T, info string) string {
	t.Helper()
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
			return v
		}
	}
	t.Fatalf("no total_connections_received in %q", info)
	return ""
}

// counterValue is the value of the counter name registered on reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
