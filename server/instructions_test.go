package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// TestSetInstructions: initialize returns the instructions set last; a
// session initialized before keeps its own.
func TestSetInstructions(t *testing.T) {
	srv := server.New(server.WithInstructions("first"))
	t.Cleanup(func() { _ = srv.Close() })
	assert.Equal(t, "first", srv.Instructions())
	assert.Equal(t, "first", mcptest.Pipe(t, srv).Initialize("", nil).Instructions)
	srv.SetInstructions("second")
	assert.Equal(t, "second", srv.Instructions())
	assert.Equal(t, "second", mcptest.Pipe(t, srv).Initialize("", nil).Instructions)
}
