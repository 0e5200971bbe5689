package gateway_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// upstreamEnv makes the test binary a stdio upstream (runUpstream).
const upstreamEnv = "GATEWAY_TEST_UPSTREAM"

// runUpstream serves, on standard input and output, "pid" (answers the
// process id) and "die" (exits with status 3 in the middle of the call),
// and returns the exit status.
func runUpstream() int {
	srv := server.New()
	_ = srv.AddTool(server.Tool{Name: "pid"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text(strconv.Itoa(os.Getpid())), nil
	})
	_ = srv.AddTool(server.Tool{Name: "die"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		os.Exit(3)
		return nil, nil
	})
	if err := srv.Serve(context.Background(), stdio.Std()); err != nil {
		return 1
	}
	return 0
}

// TestStdioUpstreamDiesMidCall: a stdio upstream that dies in the middle
// of a call answers that call at once with an error naming the upstream;
// the next call starts a new process, and works.
func TestStdioUpstreamDiesMidCall(t *testing.T) {
	testkit.Watchdog(t)
	c := front(t, gateway.Upstream{Name: "e", Command: []string{os.Args[0], "-test.run=^$"}, Env: []string{upstreamEnv + "=1"}})
	first := c.CallTool("pid", nil).Text()
	require.NotEmpty(t, first)

	_, rpcErr := c.Call("tools/call", map[string]any{"name": "die"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeInternal), rpcErr.Code)
	assert.Equal(t, "upstream e is gone", rpcErr.Message)

	second := c.CallTool("pid", nil).Text()
	assert.NotEqual(t, first, second, "a new process serves the next call")
}
