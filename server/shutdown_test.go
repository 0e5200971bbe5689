package server_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/transport/memory"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// Shutdown with a deadline lets a fast handler finish, refuses new requests
// while draining, and cancels the slow one with the shutdown cause.
func TestShutdownDrainsThenCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		fastStarted, releaseFast, slowStarted := make(chan struct{}), make(chan struct{}), make(chan struct{})
		slowCause := make(chan error, 1)
		h.addTool("fast", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			close(fastStarted)
			<-releaseFast
			return server.Text("fast done"), nil
		})
		h.addTool("slow", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			close(slowStarted)
			<-ctx.Done()
			slowCause <- context.Cause(ctx)
			return nil, ctx.Err()
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.SendCallTool(2, "fast", `{}`)
		h.SendCallTool(3, "slow", `{}`)
		<-fastStarted
		<-slowStarted

		shutdown := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			shutdown <- h.srv.Shutdown(ctx)
		}()
		synctest.Wait()
		h.SendCallTool(4, "fast", `{}`) // refused while draining
		assert.Equal(t, int64(protocol.CodeServerBusy), h.RecvError(4).Code)

		close(releaseFast)
		text, _ := toolText(t, h.RecvResult(2))
		assert.Equal(t, "fast done", text)

		require.ErrorIs(t, <-slowCause, server.ErrShutdown)
		require.ErrorIs(t, <-shutdown, context.DeadlineExceeded)
		require.ErrorIs(t, h.Wait(), server.ErrServerClosed)
		assert.Equal(t, []drop{{"3", protocol.DropShutdown}}, h.obs.snapshotDrops())

		// A server that shut down refuses new sessions.
		client, srvEnd := memory.NewPair()
		defer func() { _ = client.Close() }()
		require.ErrorIs(t, h.srv.Serve(context.Background(), srvEnd), server.ErrServerClosed)
	})
}

// Shutdown returns nil as soon as every in-flight request is done.
func TestShutdownIdleReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		release := make(chan struct{})
		h.addTool("wait", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			<-release
			return server.Text("done"), nil
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.SendCallTool(2, "wait", `{}`)
		synctest.Wait()
		shutdown := make(chan error, 1)
		go func() { shutdown <- h.srv.Shutdown(context.Background()) }()
		synctest.Wait()
		close(release)
		h.RecvResult(2)
		require.NoError(t, <-shutdown)
		require.ErrorIs(t, h.Wait(), server.ErrServerClosed)
		assert.Empty(t, h.obs.snapshotDrops())
	})
}

// Serve's context ends the session with that context's cause.
func TestServeContextCancelEndsSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		started := make(chan struct{})
		causes := make(chan error, 1)
		h.addTool("block", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, ctx.Err()
		})
		ctx, cancel := context.WithCancelCause(context.Background())
		h.Client = mcptest.Pipe(t, h.srv, mcptest.WithServeContext(ctx))
		h.Initialize(protocol.Version20251125, nil)
		h.SendCallTool(2, "block", `{}`)
		<-started
		stop := context.Canceled
		cancel(stop)
		require.ErrorIs(t, <-causes, stop)
		require.ErrorIs(t, h.Wait(), stop)
	})
}
