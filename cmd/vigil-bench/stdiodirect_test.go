package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStdioEnv makes the test binary stdiopeer.ServeFake, a fake MCP
// server over stdio (TestMain).
const fakeStdioEnv = "VIGIL_BENCH_FAKE_STDIO"

// TestStdioClient: the direct client initializes, passes over the
// notifications between answers, times each call and refuses an answer
// without what it wants.
func TestStdioClient(t *testing.T) {
	t.Setenv(fakeStdioEnv, "1")
	self, err := os.Executable()
	require.NoError(t, err)
	c, err := startStdioClient(t.Context(), self, echoArgs{arguments: `{"text":"hello"}`, want: `"text":"tools/call`})
	require.NoError(t, err)
	defer c.close()
	for range 3 {
		d, err := c.call()
		require.NoError(t, err)
		assert.Positive(t, d)
	}
	c.args.want = "Echo: hello"
	_, err = c.call()
	assert.ErrorContains(t, err, "without")
}
