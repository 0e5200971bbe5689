package mcptest

import (
	"testing"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// Pipe serves srv (a *server.Server, or one wrapped for instrumentation:
// anything with its Serve method) on one end of an in-memory pipe
// ([memory.NewPair]), in a goroutine of its own, and returns a client on the other end, before the
// initialize handshake. When the test ends the client closes its end and
// waits for Serve to return; [Client.Wait] returns what Serve returned.
// The options [WithServeContext] and [WithServerConn] shape the Serve call.
func Pipe(t testing.TB, srv streamable.Server, opts ...Option) *Client {
	clientEnd, serverEnd := memory.NewPair()
	c := NewClient(t, clientEnd, opts...)
	t = c.t // a stand-in when t is nil
	t.Helper()
	var conn transport.Conn = serverEnd
	if c.cfg.serverConn != nil {
		conn = c.cfg.serverConn(serverEnd)
	}
	c.served = make(chan struct{})
	go func() {
		defer close(c.served)
		c.serveErr = srv.Serve(c.cfg.serveCtx, conn)
	}()
	t.Cleanup(func() {
		_ = clientEnd.Close()
		<-c.served
	})
	return c
}

// Connect is [Pipe] followed by [Client.Initialize] of 2025-11-25 with the
// capabilities of the options: a client ready for tools/call and the rest.
func Connect(t testing.TB, srv streamable.Server, opts ...Option) *Client {
	c := Pipe(t, srv, opts...)
	c.t.Helper()
	c.Initialize("", nil)
	return c
}
