package server_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// presentConn is a drivenConn whose client holds a standalone stream,
// whose close the test decides (transport.ClientPresence).
type presentConn struct {
	drivenConn
	presence sync.Mutex
	closed   time.Time
	onClosed func()
}

func (c *presentConn) OnStandaloneClosed(f func()) {
	c.presence.Lock()
	defer c.presence.Unlock()
	c.onClosed = f
}

func (c *presentConn) StandaloneClosedAt() time.Time {
	c.presence.Lock()
	defer c.presence.Unlock()
	return c.closed
}

// closeStandalone closes the client's standalone stream now, and tells
// the server, as the transport does.
func (c *presentConn) closeStandalone() {
	c.presence.Lock()
	c.closed = time.Now()
	f := c.onClosed
	c.presence.Unlock()
	if f != nil {
		f()
	}
}

// post delivers body on a goroutine of its own with stream as its stream,
// as a POST does.
func (c *drivenConn) post(stream context.Context, t *testing.T, body string) {
	t.Helper()
	m, err := transport.DecodeMessage([]byte(body))
	require.NoError(t, err)
	c.mu.Lock()
	d := c.dispatch
	c.mu.Unlock()
	require.NotNil(t, d, "SetDispatch was not called")
	go d.Dispatch(stream, m)
}

// closeRig is a session attached to a Conn whose requests' streams the
// test closes, with a tool "block" that waits for its cancellation, and
// the outcomes sealed.
type closeRig struct {
	conn     *presentConn
	srv      *server.Server
	started  chan struct{} // one per call of block
	seen     chan time.Time
	outcomes chan server.Outcome
	sealedAt chan time.Time
	done     chan error
}

func newCloseRig(t *testing.T) *closeRig {
	t.Helper()
	r := &closeRig{
		conn: &presentConn{}, started: make(chan struct{}, 4), seen: make(chan time.Time, 4),
		outcomes: make(chan server.Outcome, 4), sealedAt: make(chan time.Time, 4), done: make(chan error, 1),
	}
	record := func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "tools/call" {
				serverhook.Of[server.Outcome](ctx).OnDone(func(out server.Outcome) {
					r.sealedAt <- time.Now()
					r.outcomes <- out
				})
			}
			return next(ctx, req)
		}
	}
	r.srv = server.New(server.WithMiddleware(record))
	require.NoError(t, r.srv.AddTool(server.Tool{Name: "block"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		r.started <- struct{}{}
		<-ctx.Done()
		r.seen <- time.Now()
		return nil, ctx.Err()
	}))
	require.NoError(t, r.srv.Attach(context.Background(), r.conn, func(err error) { r.done <- err }))
	return r
}

// call starts block as request id on a stream of its own, and returns
// the function that closes the stream, with when it did.
func (r *closeRig) call(t *testing.T, id string) (closeStream func() time.Time) {
	t.Helper()
	stream, cancel := context.WithCancel(context.Background())
	r.conn.post(stream, t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"block"}}`)
	<-r.started
	return func() time.Time {
		at := time.Now()
		cancel()
		return at
	}
}

func (r *closeRig) init(t *testing.T) {
	t.Helper()
	r.conn.send(t, attachInit)
	r.conn.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// sealed waits for the call's outcome and when it was sealed.
func (r *closeRig) sealed() (server.Outcome, time.Time) {
	return <-r.outcomes, <-r.sealedAt
}

// A 2025 request whose stream closes is cancelled at once; its cause
// settles within StreamCloseGrace by what follows: the client's
// notification (before or after the close), the client gone (its session
// ended, or its standalone stream closed too), or nothing (stream_close).
func TestStreamCloseSettlesTheCause(t *testing.T) {
	cases := []struct {
		name string
		// after runs once the stream closed (at closed), for the client's
		// next move; it returns how long after the close the outcome must
		// be sealed.
		after func(t *testing.T, r *closeRig) time.Duration
		want  protocol.CancelReason
		drop  protocol.DropReason
	}{
		{
			"bare close", func(*testing.T, *closeRig) time.Duration { return server.StreamCloseGrace },
			protocol.ReasonStreamClose, protocol.DropPeerGone,
		},
		{"notification within the grace", func(t *testing.T, r *closeRig) time.Duration {
			time.Sleep(5 * time.Millisecond) // go-sdk's notification comes a few ms later
			r.conn.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user pressed stop"}}`)
			return 5 * time.Millisecond
		}, protocol.ReasonClientCancel, protocol.DropCancelled},
		{"notification after the grace", func(t *testing.T, r *closeRig) time.Duration {
			time.Sleep(server.StreamCloseGrace + time.Millisecond)
			r.conn.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
			return server.StreamCloseGrace
		}, protocol.ReasonStreamClose, protocol.DropPeerGone},
		{"standalone stream closed within the grace", func(_ *testing.T, r *closeRig) time.Duration {
			time.Sleep(10 * time.Millisecond)
			r.conn.closeStandalone() // settles at once: no wait for the rest of the grace
			return 10 * time.Millisecond
		}, protocol.ReasonTransportClose, protocol.DropPeerGone},
		{"session ended within the grace", func(_ *testing.T, r *closeRig) time.Duration {
			time.Sleep(10 * time.Millisecond)
			r.conn.leave()
			return 10 * time.Millisecond
		}, protocol.ReasonTransportClose, protocol.DropPeerGone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newCloseRig(t)
				r.init(t)
				closeStream := r.call(t, "1")
				closed := closeStream()
				seen := <-r.seen
				assert.Less(t, seen.Sub(closed), 100*time.Millisecond, "the handler is cancelled at once")
				after := tc.after(t, r)
				out, at := r.sealed()
				assert.Equal(t, tc.want, server.ReasonOfCause(out.Cause), "cause %v", out.Cause)
				assert.Equal(t, tc.drop, out.Dropped)
				assert.Equal(t, after, at.Sub(closed), "sealed once the cause settled")
				assert.Equal(t, time.Duration(0), out.Ended.Sub(closed), "the request ended at the close: the grace is the label's, not its duration's")
				assert.NotContains(t, out.Cause.Error(), "%!")
				r.conn.leave()
				require.NoError(t, <-r.done)
				synctest.Wait()
				assert.Empty(t, r.outcomes, "one outcome per request")
			})
		})
	}
}

// A standalone stream that closed just before the request's stream (a
// killed client's connections close in no set order) settles the cause at
// once: the client is gone.
func TestStreamCloseAfterStandalone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCloseRig(t)
		r.init(t)
		closeStream := r.call(t, "1")
		r.conn.closeStandalone()
		time.Sleep(time.Millisecond)
		closed := closeStream()
		out, at := r.sealed()
		assert.Equal(t, protocol.ReasonTransportClose, server.ReasonOfCause(out.Cause), "cause %v", out.Cause)
		assert.Equal(t, time.Duration(0), at.Sub(closed))
		r.conn.leave()
		require.NoError(t, <-r.done)
	})
}

// The client's notification coming before its stream closes cancels the
// request as the client's, and the close changes nothing.
func TestNotificationBeforeStreamClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCloseRig(t)
		r.init(t)
		closeStream := r.call(t, "1")
		r.conn.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		<-r.seen
		closeStream()
		out, _ := r.sealed()
		assert.Equal(t, protocol.ReasonClientCancel, server.ReasonOfCause(out.Cause))
		r.conn.leave()
		require.NoError(t, <-r.done)
	})
}

// While its cause settles, the request is still in flight: a drain waits
// for it, and the session ends only once it is sealed.
func TestStreamCloseHoldsTheDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newCloseRig(t)
		r.init(t)
		closeStream := r.call(t, "1")
		closed := closeStream()
		<-r.seen
		shut := make(chan error, 1)
		go func() { shut <- r.srv.Shutdown(context.Background()) }()
		out, at := r.sealed()
		assert.Equal(t, protocol.ReasonStreamClose, server.ReasonOfCause(out.Cause))
		assert.Equal(t, server.StreamCloseGrace, at.Sub(closed))
		require.NoError(t, <-shut)
		require.ErrorIs(t, <-r.done, server.ErrServerClosed)
	})
}

// A Conn that reports its end with no error ends the session with a cause
// that says so: ErrTransportClose and io.EOF, with no formatting verb
// left over (stop's nil branch printed %!w(<nil>)), and done gets nil, a
// clean end.
func TestEndWithoutError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := newRecorder()
		srv := server.New(server.WithObserver(obs.observer()))
		conn := &drivenConn{}
		done := make(chan error, 1)
		require.NoError(t, srv.Attach(context.Background(), conn, func(err error) { done <- err }))
		conn.send(t, attachInit)
		conn.finish(nil)
		require.NoError(t, <-done)
		obs.mu.Lock()
		defer obs.mu.Unlock()
		require.Len(t, obs.ended, 1)
		require.ErrorIs(t, obs.ended[0], server.ErrTransportClose)
		assert.NotContains(t, obs.ended[0].Error(), "%!", "the cause's text")
	})
}

// A handler cancelled by its stream's close reads a provisional cause at
// once (stream_close), and CancelReasonOf waits for the final one: the
// one the outcome records, read alike by every reader however many wait,
// and for good once read (a notification after the grace changes
// nothing). It waits only as long as the client takes to show what it did.
func TestCancelReasonOfWaitsForTheFinalCause(t *testing.T) {
	cases := []struct {
		name  string
		after func(t *testing.T, r *closeRig) time.Duration // as in TestStreamCloseSettlesTheCause
		want  protocol.CancelReason
	}{
		{"bare close", func(*testing.T, *closeRig) time.Duration { return server.StreamCloseGrace }, protocol.ReasonStreamClose},
		{"notification within the grace", func(t *testing.T, r *closeRig) time.Duration {
			time.Sleep(5 * time.Millisecond)
			r.conn.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
			return 5 * time.Millisecond
		}, protocol.ReasonClientCancel},
		{"notification after the grace", func(t *testing.T, r *closeRig) time.Duration {
			time.Sleep(server.StreamCloseGrace + time.Millisecond)
			r.conn.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
			return server.StreamCloseGrace
		}, protocol.ReasonStreamClose},
		{"standalone stream closed within the grace", func(_ *testing.T, r *closeRig) time.Duration {
			time.Sleep(10 * time.Millisecond)
			r.conn.closeStandalone()
			return 10 * time.Millisecond
		}, protocol.ReasonTransportClose},
		{"session ended within the grace", func(_ *testing.T, r *closeRig) time.Duration {
			time.Sleep(10 * time.Millisecond)
			r.conn.leave()
			return 10 * time.Millisecond
		}, protocol.ReasonTransportClose},
	}
	const readers = 4 // the handler and three goroutines of its own
	type reading struct {
		provisional, final protocol.CancelReason
		at                 time.Time
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newCloseRig(t)
				readings := make(chan reading, readers)
				handlerCtx := make(chan context.Context, 1)
				require.NoError(t, r.srv.AddTool(server.Tool{Name: "read"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
					handlerCtx <- ctx
					r.started <- struct{}{}
					<-ctx.Done()
					provisional := server.ReasonOfCause(context.Cause(ctx))
					read := func() { readings <- reading{provisional, server.CancelReasonOf(ctx), time.Now()} }
					var wg sync.WaitGroup
					for range readers - 1 {
						wg.Go(read)
					}
					read()
					wg.Wait()
					return nil, ctx.Err()
				}))
				r.init(t)
				stream, closeStream := context.WithCancel(context.Background())
				r.conn.post(stream, t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}`)
				<-r.started
				closed := time.Now()
				closeStream()
				after := tc.after(t, r)
				out, sealed := r.sealed()
				assert.Equal(t, tc.want, server.ReasonOfCause(out.Cause), "recorded: %v", out.Cause)
				for range readers {
					got := <-readings
					assert.Equal(t, protocol.ReasonStreamClose, got.provisional, "read at once, the cause is provisional")
					assert.Equal(t, tc.want, got.final, "CancelReasonOf reads the recorded cause")
					assert.Equal(t, after, got.at.Sub(closed), "it waits only until the cause settled")
				}
				assert.Equal(t, after, sealed.Sub(closed), "a handler that waits is sealed as soon")
				synctest.Wait() // a notification after the grace has been read
				assert.Equal(t, tc.want, server.ReasonOfCause(context.Cause(<-handlerCtx)), "final for good")
				r.conn.leave()
				require.NoError(t, <-r.done)
			})
		})
	}
}

// CancelReasonOf does not wait for a context that is not cancelled, nor
// for one whose cause is not a stream close's.
func TestCancelReasonOfWaitsOnlyForAStreamClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		start := time.Now()
		assert.Equal(t, protocol.ReasonNone, server.CancelReasonOf(ctx))
		cancel(server.ErrShutdown)
		assert.Equal(t, protocol.ReasonShutdown, server.CancelReasonOf(ctx))
		assert.Equal(t, time.Duration(0), time.Since(start))
	})
}
