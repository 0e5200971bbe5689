package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStdioEnv makes the test binary a fake MCP server over stdio
// (TestMain): it answers every request by id, each answer after a
// notification, as server-everything sends its log messages between
// answers.
const fakeStdioEnv = "VIGIL_BENCH_FAKE_STDIO"

// fakeStdioServer is that server.
func fakeStdioServer() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.ID == nil {
			continue
		}
		fmt.Printf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"before %s"}}`+"\n", msg.ID)
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"serverInfo":{},"content":[{"type":"text","text":"hello"}]}}`+"\n", msg.ID)
	}
}

// TestStdioClient: the direct client initializes, passes over the
// notifications between answers, times each call and refuses an answer
// without what it wants.
func TestStdioClient(t *testing.T) {
	t.Setenv(fakeStdioEnv, "1")
	self, err := os.Executable()
	require.NoError(t, err)
	c, err := startStdioClient(t.Context(), self, echoArgs{arguments: `{"text":"hello"}`, want: `"text":"hello"`})
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
