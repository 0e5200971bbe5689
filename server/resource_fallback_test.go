package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestResourceFallback: a read of a URI nothing registered serves goes to
// the fallback; its ErrResourceNotFound is answered as not found, and
// without a fallback the read is not found.
func TestResourceFallback(t *testing.T) {
	srv := server.New()
	t.Cleanup(func() { _ = srv.Close() })
	require.NoError(t, srv.AddResource(server.Resource{URI: "demo://listed", Name: "listed"}, func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return &server.ReadResourceResult{}, nil
	}))
	srv.SetResourceFallback(func(_ context.Context, req *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		if req.URI != "demo://session/made" {
			return nil, server.ErrResourceNotFound
		}
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{{Text: "made"}}}, nil
	})
	c := mcptest.Pipe(t, srv)
	c.Initialize("", nil)
	raw, rpcErr := c.Call("resources/read", map[string]string{"uri": "demo://session/made"})
	require.Nil(t, rpcErr)
	assert.JSONEq(t, `{"contents":[{"uri":"demo://session/made","text":"made"}]}`, string(raw))
	_, rpcErr = c.Call("resources/read", map[string]string{"uri": "demo://session/other"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeResourceNotFound), rpcErr.Code)

	srv.SetResourceFallback(nil)
	_, rpcErr = c.Call("resources/read", map[string]string{"uri": "demo://session/made"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeResourceNotFound), rpcErr.Code)
}

// TestResourceFallbackDeclaresResources: a server with a fallback and no
// resource declares resources, and its read is served; without the
// fallback it declares none and resources/read is not found as a method.
func TestResourceFallbackDeclaresResources(t *testing.T) {
	srv := server.New()
	t.Cleanup(func() { _ = srv.Close() })
	c := mcptest.Pipe(t, srv)
	assert.NotContains(t, string(c.Initialize("", nil).Capabilities), `"resources"`)
	_, rpcErr := c.Call("resources/read", map[string]string{"uri": "demo://session/made"})
	require.NotNil(t, rpcErr)
	assert.Equal(t, int64(protocol.CodeMethodNotFound), rpcErr.Code)

	srv.SetResourceFallback(func(context.Context, *server.ReadResourceRequest) (*server.ReadResourceResult, error) {
		return &server.ReadResourceResult{Contents: []*server.ResourceContents{{Text: "made"}}}, nil
	})
	c = mcptest.Pipe(t, srv)
	assert.Contains(t, string(c.Initialize("", nil).Capabilities), `"resources"`)
	raw, rpcErr := c.Call("resources/read", map[string]string{"uri": "demo://session/made"})
	require.Nil(t, rpcErr)
	assert.JSONEq(t, `{"contents":[{"uri":"demo://session/made","text":"made"}]}`, string(raw))
}
