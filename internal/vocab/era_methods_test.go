package vocab_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/internal/vocab"
)

func TestInEra(t *testing.T) {
	t.Parallel()
	assert.True(t, vocab.RemovedIn2026("initialize"))
	assert.False(t, vocab.RemovedIn2026("tools/call"))
	assert.False(t, vocab.InEra(true, "initialize"), "a stateless client never initializes")
	assert.True(t, vocab.InEra(false, "initialize"))
	assert.True(t, vocab.InEra(true, "subscriptions/listen"))
	assert.False(t, vocab.InEra(false, "subscriptions/listen"), "a session-era client does not listen")
	assert.True(t, vocab.InEra(true, "tools/call"))
	assert.True(t, vocab.InEra(false, "tools/call"))
}
