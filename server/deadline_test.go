package server_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// seenCtx is what a handler saw of its context once it was done.
type seenCtx struct {
	deadline time.Time
	hasDL    bool
	err      error
	cause    error
	at       time.Duration // since the request was sent
}

// TestSetDeadline bounds a blocking tools/call with Request.SetDeadline in
// fake time: the handler's context reports the deadline (the earlier of
// two calls), ends at it with Err DeadlineExceeded and cause
// ErrHandlerTimeout, the request is answered -32001 whatever the handler
// returned, and no cancellation is reported for it.
func TestSetDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		bound := func(next server.Handler) server.Handler {
			return func(ctx context.Context, req *server.Request) (any, error) {
				if req.Method == "tools/call" {
					req.SetDeadline(req.Received.Add(3 * time.Second))
					req.SetDeadline(req.Received.Add(2 * time.Second)) // earlier: moves it
					req.SetDeadline(req.Received.Add(time.Hour))       // later: ignored
				}
				return next(ctx, req)
			}
		}
		h := newHarness(t, server.WithMiddleware(bound))
		seen := make(chan seenCtx, 1)
		var t0 time.Time
		h.addTool("block", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			dl, ok := ctx.Deadline()
			<-ctx.Done()
			seen <- seenCtx{deadline: dl, hasDL: ok, err: ctx.Err(), cause: context.Cause(ctx), at: time.Since(t0)}
			return server.Text("ignored: the request ran out of time"), nil
		})
		h.start()
		h.Initialize("", nil)
		t0 = time.Now()
		h.SendCallTool(2, "block", nil)
		resp := h.RecvResponseTo(2)
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(-32001), resp.Error.Code)
		assert.Equal(t, "request timed out", resp.Error.Message)
		assert.Nil(t, resp.Result)
		got := <-seen
		assert.True(t, got.hasDL)
		assert.Equal(t, t0.Add(2*time.Second), got.deadline)
		assert.Equal(t, 2*time.Second, got.at)
		require.ErrorIs(t, got.err, context.DeadlineExceeded)
		assert.Same(t, server.ErrHandlerTimeout, got.cause)

		// The session goes on; a request in time is answered as usual, and
		// none was reported cancelled.
		h.addTool("quick", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			dl, ok := ctx.Deadline()
			seen <- seenCtx{deadline: dl, hasDL: ok, err: ctx.Err()}
			return server.Text("done"), nil
		})
		t0 = time.Now()
		h.SendCallTool(3, "quick", nil)
		resp = h.RecvResponseTo(3)
		require.Nil(t, resp.Error)
		got = <-seen
		assert.Equal(t, t0.Add(2*time.Second), got.deadline)
		require.NoError(t, got.err)
		h.obs.mu.Lock()
		assert.Empty(t, h.obs.cancelled)
		h.obs.mu.Unlock()
	})
}

// TestSetDeadlineClientCancelFirst: a client cancel before the deadline
// keeps its cause, and the request is not answered.
func TestSetDeadlineClientCancelFirst(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		bound := func(next server.Handler) server.Handler {
			return func(ctx context.Context, req *server.Request) (any, error) {
				req.SetDeadline(time.Now().Add(time.Minute))
				return next(ctx, req)
			}
		}
		h := newHarness(t, server.WithMiddleware(bound))
		causes := make(chan error, 1)
		h.addTool("block", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, ctx.Err()
		})
		h.start()
		h.Initialize("", nil)
		h.SendCallTool(2, "block", nil)
		time.Sleep(time.Second)
		h.Notify("notifications/cancelled", map[string]any{"requestId": 2})
		require.ErrorIs(t, <-causes, server.ErrClientCancel)
		synctest.Wait()
		h.obs.mu.Lock()
		reported := h.obs.cancelled["2"]
		h.obs.mu.Unlock()
		require.ErrorIs(t, reported, server.ErrClientCancel)
	})
}
