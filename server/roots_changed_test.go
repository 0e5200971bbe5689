package server_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
)

// TestRootsChanged: a client's notifications/roots/list_changed reaches
// the function SetRootsChanged set, with its session in the context;
// asked from a goroutine of its own, ListRoots on that context gives the
// roots the client now has. Another session's change names that one.
// Unset, the notification is still accepted, and tells no one.
func TestRootsChanged(t *testing.T) {
	srv := server.New()
	type change struct {
		ss    *server.Session
		roots []server.Root
		err   error
	}
	changes := make(chan change, 4)
	srv.SetRootsChanged(func(ctx context.Context) {
		ss := server.RequestFromContext(ctx).Session
		go func() { // ListRoots waits for the client's answer, which this goroutine's return lets in
			roots, err := server.ListRoots(ctx)
			changes <- change{ss, roots, err}
		}()
	})
	client := func() *mcptest.Client {
		c := mcptest.Pipe(t, srv, mcptest.WithCapabilities(map[string]any{"roots": map[string]any{"listChanged": true}}))
		c.Initialize("", nil)
		return c
	}
	// changeRoots tells the server c's roots changed, and answers its
	// roots/list with uri.
	changeRoots := func(c *mcptest.Client, uri string) {
		c.Notify("notifications/roots/list_changed", nil)
		req := c.RecvRequest()
		require.Equal(t, "roots/list", req.Method)
		c.Reply(req, map[string]any{"roots": []map[string]string{{"uri": uri}}})
	}
	a, b := client(), client()

	changeRoots(a, "file:///first")
	got := <-changes
	require.NoError(t, got.err)
	assert.Equal(t, []server.Root{{URI: "file:///first"}}, got.roots)
	first := got.ss

	changeRoots(b, "file:///second")
	got = <-changes
	require.NoError(t, got.err)
	assert.Equal(t, []server.Root{{URI: "file:///second"}}, got.roots)
	assert.NotSame(t, first, got.ss, "each change names its own session")

	srv.SetRootsChanged(nil)
	a.Notify("notifications/roots/list_changed", nil)
	_, rpcErr := a.Call("ping", nil) // the notification was read before the ping's answer
	require.Nil(t, rpcErr)
	select {
	case c := <-changes:
		t.Fatalf("told after SetRootsChanged(nil): %+v", c)
	default:
	}
}
