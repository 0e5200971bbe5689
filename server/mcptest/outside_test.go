package mcptest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// TestOutsideATest: with a nil t (an Example), a failing call panics with
// what a test would be failed with, and Close ends the session as the end
// of a test does: the server's Serve has returned when it returns.
func TestOutsideATest(t *testing.T) {
	c := mcptest.Connect(nil, server.New())
	assert.PanicsWithValue(t, "mcptest: tools/list: error -32601: method not found: tools/list", func() { c.ListTools() },
		"a server without tools does not serve tools/list")
	assert.PanicsWithValue(t, "mcptest: NewClient with a nil Conn", func() { mcptest.NewClient(nil, nil) })
	require.NoError(t, c.Close())
	select {
	case <-c.Done():
	default:
		t.Fatal("Close returned before the server's Serve")
	}
	require.NoError(t, c.Close(), "Close is idempotent")
}
