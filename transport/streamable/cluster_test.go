package streamable_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/transport/streamable"
)

// foreignCluster names a replica, as a Cluster must, and implements
// nothing of the replication protocol behind it.
type foreignCluster struct{}

func (foreignCluster) Replica() string { return "elsewhere" }

// WithCluster refuses, at once and by name, a Cluster that Vigil's
// replication protocol cannot drive, rather than an Endpoint failing at
// its first shared session.
func TestWithClusterRefusesForeignCluster(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t,
		"streamable: WithCluster: streamable_test.foreignCluster does not implement Vigil's replication protocol: make the cluster with package redisshare",
		func() { streamable.WithCluster(foreignCluster{}) })
}
