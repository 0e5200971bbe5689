package streamable_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/replication"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// The endpoint's default and a cluster store's default for a session not
// yet initialized are one value, written twice so that the API names no
// internal package.
func TestDefaultInitTimeoutIsTheStoresDefault(t *testing.T) {
	assert.Equal(t, replication.DefaultInitTimeout, streamable.DefaultInitTimeout)
}
