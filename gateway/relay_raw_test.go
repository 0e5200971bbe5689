package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// rawResult is what the test upstreams' "raw" tool answers: members and
// values a re-encoding would drop or reorder.
const rawResult = `{"isError":false,"content":[{"type":"text","text":"<as sent>","extra":1}],"structuredContent":{"b":2,"a":1},"vendor":{"x":[1,2]}}`

// rawTool answers rawResult as it is.
func rawTool(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
	return server.RawToolResult(json.RawMessage(rawResult))
}

// TestResultRelayedAsSent: a tools/call result reaches the caller byte for
// byte as the upstream sent it ("isError": false, members the gateway does
// not know, their order and escaping), over HTTP and over stdio.
func TestResultRelayedAsSent(t *testing.T) {
	testkit.Watchdog(t)
	up := server.New()
	require.NoError(t, up.AddTool(server.Tool{Name: "raw"}, rawTool))
	ep := streamable.New(up)
	ts := httptest.NewServer(ep)
	t.Cleanup(func() { ts.Close(); _, _ = ep.Close(), up.Close() })
	for _, c := range []*mcptest.Client{front(t, gateway.Upstream{Name: "h", URL: ts.URL}), front(t, testUpstream())} {
		raw, rpcErr := c.Call("tools/call", map[string]any{"name": "raw"})
		require.Nil(t, rpcErr)
		assert.True(t, bytes.Equal([]byte(rawResult), raw), "byte for byte (JSONEq would pass a re-encoding): %s", raw)
	}
}
