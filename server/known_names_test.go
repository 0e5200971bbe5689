package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// HasMethod and HasPrompt tell the names a server knows from names a
// client made up: the method table (of any protocol version, fixed by
// New), and the prompts registered now.
func TestHasMethodAndPrompt(t *testing.T) {
	srv := server.New()
	for _, m := range []string{"initialize", "ping", "tools/call", "tools/list", "prompts/get", "resources/read", "notifications/initialized"} {
		assert.True(t, server.HasMethod(srv, m), m)
	}
	for _, m := range []string{"", "tools/call x", "nope", "Tools/Call"} {
		assert.False(t, server.HasMethod(srv, m), m)
	}

	assert.False(t, srv.HasPrompt("greet"))
	require.NoError(t, srv.AddPrompt(server.Prompt{Name: "greet"}, func(context.Context, *server.GetPromptRequest) (*server.GetPromptResult, error) {
		return &server.GetPromptResult{}, nil
	}))
	assert.True(t, srv.HasPrompt("greet"))
	assert.False(t, srv.HasPrompt("greet2"))
	assert.Equal(t, 1, srv.RemovePrompts("greet"))
	assert.False(t, srv.HasPrompt("greet"), "removed")
}
