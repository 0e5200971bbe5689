package redisshare

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseTarget: each URL form gives go-redis's options of its shape,
// with default ports, the data nodes' user apart from the Sentinels', and
// TLS that checks each node's own name.
func TestParseTarget(t *testing.T) {
	tg, err := parseTarget("rediss+sentinel://vigil:pw@s1,s2:26380,[::1]/mymaster/3?sentinel_user=watch&pool_size=7")
	require.NoError(t, err)
	require.Equal(t, shapeSentinel, tg.shape)
	o := tg.failover
	assert.Equal(t, "mymaster", o.MasterName)
	assert.Equal(t, []string{"s1:26379", "s2:26380", "[::1]:26379"}, o.SentinelAddrs)
	assert.Equal(t, 3, o.DB)
	assert.Equal(t, 7, o.PoolSize)
	assert.Equal(t, "vigil", o.Username)
	assert.Equal(t, "pw", o.Password)
	assert.Equal(t, "watch", o.SentinelUsername)
	assert.Empty(t, o.SentinelPassword)
	require.NotNil(t, o.TLSConfig)
	assert.Empty(t, o.TLSConfig.ServerName, "each node's certificate names that node")
	assert.Equal(t, "sentinel mymaster/3 via s1:26379,s2:26380,[::1]:26379", tg.String())

	tg, err = parseTarget("redis+sentinel://127.0.0.1:1/m")
	require.NoError(t, err)
	assert.Nil(t, tg.failover.TLSConfig)
	assert.Zero(t, tg.failover.DB)

	tg, err = parseTarget("rediss+cluster://vigil@n1,n2:7001,n3/")
	require.NoError(t, err)
	require.Equal(t, shapeCluster, tg.shape)
	assert.Equal(t, []string{"n1:6379", "n2:7001", "n3:6379"}, tg.cluster.Addrs)
	assert.Equal(t, "vigil", tg.cluster.Username)
	require.NotNil(t, tg.cluster.TLSConfig)
	assert.Empty(t, tg.cluster.TLSConfig.ServerName)
	assert.Equal(t, "cluster n1:6379,n2:7001,n3:6379", tg.String())

	tg, err = parseTarget("rediss://vigil@h:6380/2")
	require.NoError(t, err)
	require.Equal(t, shapeNode, tg.shape)
	assert.Equal(t, "h:6380/2", tg.String())

	for raw, want := range map[string]string{
		"redis+sentinel://s1,s2":        "needs the master's name",
		"redis+sentinel://s1/m/0/x":     "needs the master's name",
		"redis+sentinel://s1/m/x":       "invalid database number",
		"redis+sentinel:///m":           "names no host",
		"redis+sentinel://s1:x/m":       "invalid port",
		"redis+sentinel://s1/m?bogus=1": "unexpected option: bogus",
		"redis+cluster://n1/3":          "only database 0",
		"redis+cluster://n1?bogus=1":    "unexpected option: bogus",
		"redis+raft://n1":               "unknown URL scheme",
		"http+cluster://n1":             "unknown URL scheme",
		"http://n1":                     "invalid URL scheme",
	} {
		_, err := parseTarget(raw)
		assert.ErrorContains(t, err, want, raw)
	}
}
