package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// TestRawToolResult: a raw result is checked (a JSON object with a content
// array), its isError is read, and it is answered byte for byte.
func TestRawToolResult(t *testing.T) {
	for _, bad := range []string{`[]`, `{"content":{}}`, `{"isError":true}`, `{"content":[]`, `"x"`} {
		_, err := server.RawToolResult(json.RawMessage(bad))
		require.Error(t, err, bad)
	}
	failed, err := server.RawToolResult(json.RawMessage(`{"content":[],"isError":true}`))
	require.NoError(t, err)
	assert.True(t, failed.IsError)

	const sent = `{"isError":false,"content":[{"type":"text","text":"a<b"}],"x":{"z":1,"y":2}}`
	srv := server.New()
	require.NoError(t, srv.AddTool(server.Tool{Name: "raw"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.RawToolResult(json.RawMessage(sent))
	}))
	t.Cleanup(func() { _ = srv.Close() })
	raw, rpcErr := mcptest.Connect(t, srv).Call("tools/call", map[string]any{"name": "raw"})
	require.Nil(t, rpcErr)
	assert.True(t, bytes.Equal([]byte(sent), raw), "byte for byte (JSONEq would pass a re-encoding): %s", raw)
}
