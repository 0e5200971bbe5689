package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport"
)

// everything is cmd/vigil-everything, built once for the tests that run
// it as an upstream.
var everything = testkit.NewBinary("github.com/vigil-mcp/vigil/cmd/vigil-everything")

// everythingBinary builds cmd/vigil-everything and returns its path.
func everythingBinary(t *testing.T) string { return everything.Path(t) }

// TestEverythingOverStdio fronts vigil-everything -stdio and uses its
// conformance tools through the gateway: logging and progress relayed to
// the caller in order before the result, sampling and elicitation asked
// of the caller (the only call in flight on a stdio upstream), a tool
// error passed through.
func TestEverythingOverStdio(t *testing.T) {
	timer := time.AfterFunc(5*time.Minute, func() { panic(t.Name() + " took longer than 5m") }) // the first build is slow on a busy machine
	defer timer.Stop()
	srv := frontServer(t, gateway.Upstream{Name: "e", Command: []string{everythingBinary(t), "-stdio"}})
	c := mcptest.Connect(t, srv,
		mcptest.WithCapabilities(map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}}),
		mcptest.WithRequestHandler(func(_ context.Context, req *transport.Request) (any, error) {
			switch req.Method {
			case "sampling/createMessage":
				return map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": "hi"}, "model": "m"}, nil
			case "elicitation/create":
				return map[string]any{"action": "accept", "content": map[string]any{"username": "u", "email": "e@example.com"}}, nil
			}
			return nil, errors.New("unexpected " + req.Method)
		}))

	assert.Equal(t, "This is a simple text response for testing.", c.CallTool("test_simple_text", nil).Text())

	c.SendCallTool(10, "test_tool_with_logging", nil)
	for _, want := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		n, ok := c.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/message", n.Method)
		assert.Contains(t, string(n.Params), want)
	}
	assert.Contains(t, string(c.RecvResult(10)), "Tool with logging executed successfully")

	c.Request(11, "tools/call", map[string]any{"name": "test_tool_with_progress", "_meta": map[string]any{"progressToken": "tok"}})
	for _, want := range []string{`"progress":0`, `"progress":50`, `"progress":100`} {
		n, ok := c.Recv().(*transport.Request)
		require.True(t, ok)
		assert.Equal(t, "notifications/progress", n.Method)
		assert.Contains(t, string(n.Params), `"progressToken":"tok"`)
		assert.Contains(t, string(n.Params), want)
	}
	res := string(c.RecvResult(11)) // the tool answers with the token it got
	assert.Contains(t, res, `"text":"tok"`, "the upstream got the caller's own token, free on its session")

	assert.Equal(t, "LLM response: hi", c.CallTool("test_sampling", map[string]any{"prompt": "q"}).Text())
	assert.Equal(t, `User response: action=accept, content={"email":"e@example.com","username":"u"}`,
		c.CallTool("test_elicitation", map[string]any{"message": "who?"}).Text())

	raw, rpcErr := c.Call("tools/call", map[string]any{"name": "test_error_handling"})
	require.Nil(t, rpcErr)
	assert.Contains(t, string(raw), `"isError":true`)
}
