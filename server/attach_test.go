package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// drivenConn is a transport.Driven Conn whose messages a test delivers
// with send, each on the test's goroutine, and whose end it decides.
type drivenConn struct {
	mu       sync.Mutex
	dispatch transport.Dispatcher
	end      func(error)
	closed   bool
	endErr   error
	written  []transport.Message
}

func (c *drivenConn) Read(context.Context) (transport.Message, error) {
	panic("Read called on a driven Conn")
}

func (c *drivenConn) Write(_ context.Context, m transport.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("driven: %w", transport.ErrClosed)
	}
	c.written = append(c.written, m)
	return nil
}

func (c *drivenConn) Close() error {
	c.finish(fmt.Errorf("driven: %w", transport.ErrClosed))
	return nil
}

// leave ends the connection as a peer that went away does.
func (c *drivenConn) leave() { c.finish(fmt.Errorf("driven: %w: %w", transport.ErrPeerGone, io.EOF)) }

func (c *drivenConn) finish(err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed, c.endErr = true, err
	end := c.end
	c.mu.Unlock()
	if end != nil {
		end(err)
	}
}

func (c *drivenConn) SetDispatch(d transport.Dispatcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dispatch = d
}

func (c *drivenConn) SetEnd(end func(error)) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		end(c.endErr)
		return
	}
	c.end = end
	c.mu.Unlock()
}

// send delivers one message and returns what was written meanwhile.
func (c *drivenConn) send(t *testing.T, body string) []transport.Message {
	t.Helper()
	m, err := transport.DecodeMessage([]byte(body))
	require.NoError(t, err)
	c.mu.Lock()
	d, n := c.dispatch, len(c.written)
	c.mu.Unlock()
	require.NotNil(t, d, "SetDispatch was not called")
	d.Dispatch(context.Background(), m)
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]transport.Message(nil), c.written[n:]...)
}

// sendAsync delivers one message on a goroutine of its own, as a POST
// would, without waiting for it.
func (c *drivenConn) sendAsync(t *testing.T, body string) {
	t.Helper()
	m, err := transport.DecodeMessage([]byte(body))
	require.NoError(t, err)
	c.mu.Lock()
	d := c.dispatch
	c.mu.Unlock()
	require.NotNil(t, d, "SetDispatch was not called")
	go d.Dispatch(context.Background(), m)
}

const attachInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// Attach runs a session without a goroutine: it returns once the session
// started, messages run on the deliverer's goroutine, and the session ends
// when the Conn reports its end, with Serve's cause and result.
func TestAttachRunsWithoutGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := newRecorder()
		srv := server.New(server.WithObserver(obs.observer()))
		conn := &drivenConn{}
		done := make(chan error, 1)
		before := runtime.NumGoroutine()
		require.NoError(t, srv.Attach(context.Background(), conn, func(err error) { done <- err }))
		synctest.Wait()
		// NumGoroutine counts the whole process: a goroutine of an earlier
		// test may end meanwhile, never one of this session start.
		assert.LessOrEqual(t, runtime.NumGoroutine(), before, "an attached session holds no goroutine")
		obs.mu.Lock()
		assert.Equal(t, 1, obs.started)
		obs.mu.Unlock()

		out := conn.send(t, attachInit)
		require.Len(t, out, 1)
		assert.Nil(t, out[0].(*transport.Response).Error)
		assert.Empty(t, conn.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		out = conn.send(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		require.Len(t, out, 1)
		assert.JSONEq(t, `{}`, string(out[0].(*transport.Response).Result))
		assert.Len(t, srv.Sessions(), 1)

		conn.leave()
		require.NoError(t, <-done, "a clean end of input")
		obs.mu.Lock()
		require.Len(t, obs.ended, 1)
		require.ErrorIs(t, obs.ended[0], server.ErrTransportClose)
		require.ErrorIs(t, obs.ended[0], transport.ErrPeerGone)
		obs.mu.Unlock()
		assert.Empty(t, srv.Sessions())
	})
}

// An attached session ends with the server (Shutdown drains it, then done
// gets ErrServerClosed) and with its context (done gets the cause); after
// Shutdown, Attach refuses new sessions and closes their Conns.
func TestAttachEnds(t *testing.T) {
	t.Run("shutdown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := server.New()
			conn := &drivenConn{}
			done := make(chan error, 1)
			require.NoError(t, srv.Attach(context.Background(), conn, func(err error) { done <- err }))
			conn.send(t, attachInit)
			require.NoError(t, srv.Shutdown(context.Background()))
			require.ErrorIs(t, <-done, server.ErrServerClosed)

			late := &drivenConn{}
			err := srv.Attach(context.Background(), late, func(error) { t.Error("done called for a refused session") })
			require.ErrorIs(t, err, server.ErrServerClosed)
			assert.True(t, late.closed, "the refused Conn is closed")
			synctest.Wait()
		})
	})
	t.Run("context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := server.New()
			conn := &drivenConn{}
			ctx, cancel := context.WithCancelCause(context.Background())
			done := make(chan error, 1)
			causes := make(chan error, 1)
			started := make(chan struct{})
			require.NoError(t, srv.AddTool(server.Tool{Name: "block"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
				close(started)
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return nil, ctx.Err()
			}))
			require.NoError(t, srv.Attach(ctx, conn, func(err error) { done <- err }))
			conn.send(t, attachInit)
			conn.sendAsync(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block"}}`)
			<-started
			stop := errors.New("stop")
			cancel(stop)
			require.ErrorIs(t, <-causes, stop, "the handler is cancelled with the context's cause")
			require.ErrorIs(t, <-done, stop)
			synctest.Wait()
		})
	})
	t.Run("close", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			obs := newRecorder()
			srv := server.New(server.WithObserver(obs.observer()))
			conn := &drivenConn{}
			done := make(chan error, 1)
			require.NoError(t, srv.Attach(context.Background(), conn, func(err error) { done <- err }))
			require.NoError(t, srv.Close())
			require.ErrorIs(t, <-done, server.ErrServerClosed)
			obs.mu.Lock()
			require.Len(t, obs.ended, 1)
			assert.Equal(t, protocol.ReasonShutdown, server.ReasonOfCause(obs.ended[0]))
			obs.mu.Unlock()
		})
	})
}
