package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// usedStates accepts each state once until it expires, and holds at most
// maxUsedStates: full of unexpired states it refuses a new one without
// recording it, and makes room once they expire.
func TestUsedStatesBounded(t *testing.T) {
	t.Parallel()
	var u usedStates
	state := func(i int) [16]byte { return stateDigest([]byte{byte(i), byte(i >> 8), byte(i >> 16), 's'}) }
	used, full := u.use(state(0), 100, 10)
	assert.False(t, used || full)
	used, _ = u.use(state(0), 100, 50)
	assert.True(t, used, "a second use before it expires")
	for i := 1; i < maxUsedStates; i++ {
		used, full = u.use(state(i), 100, 10)
		assert.False(t, used || full)
	}
	used, full = u.use(state(maxUsedStates), 200, 20)
	assert.False(t, used)
	assert.True(t, full, "full of states that have not expired")
	used, full = u.use(state(maxUsedStates), 200, 20)
	assert.False(t, used, "a refused state was not recorded")
	assert.True(t, full)
	assert.Len(t, u.seen, maxUsedStates)

	used, full = u.use(state(maxUsedStates), 200, 101)
	assert.False(t, used || full, "once the others expired, they are swept")
	assert.Len(t, u.seen, 1)
}
