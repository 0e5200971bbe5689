package vocab_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/vocab"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

func TestSessionVersions(t *testing.T) {
	t.Parallel()
	assert.Equal(t, protocol.Versions()[1:], vocab.SessionVersions(), "every version but the stateless one, newest first")
	for _, v := range vocab.SessionVersions() {
		assert.True(t, vocab.IsSessionVersion(v), v)
	}
	assert.False(t, vocab.IsSessionVersion(protocol.Version20260728))
	assert.False(t, vocab.IsSessionVersion("2099-01-01"))
	assert.True(t, vocab.BatchesAllowed(protocol.Version20250326))
	assert.True(t, vocab.BatchesAllowed(protocol.Version20241105))
	assert.False(t, vocab.BatchesAllowed(protocol.Version20250618))
	assert.False(t, vocab.BatchesAllowed(protocol.Version20251125))
}
