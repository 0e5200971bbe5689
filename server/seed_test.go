package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/stdio"
)

// Ported from python-sdk #2306, test_server_cancels_in_flight_handlers_on_transport_close:
// closing the transport cancels a handler blocked on its context (not joined),
// with the transport-close cause, its cleanup runs, and Serve returns. If the
// core waited for the handler instead, the bubble would deadlock and fail.
func TestSeedTransportCloseCancelsInFlightHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		started, cleaned := make(chan struct{}), make(chan struct{})
		var cause error
		h.addTool("block", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			close(started)
			defer close(cleaned)
			<-ctx.Done()
			cause = context.Cause(ctx)
			return nil, cause
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.SendCallTool(2, "block", `{}`)
		<-started

		require.NoError(t, h.Close()) // what stdin EOF does
		require.NoError(t, h.Wait())
		<-cleaned

		require.ErrorIs(t, cause, server.ErrTransportClose)
		require.ErrorIs(t, cause, transport.ErrPeerGone)
		assert.Equal(t, []drop{{"2", protocol.DropWriterClosed}}, h.obs.snapshotDrops())
		require.ErrorIs(t, h.obs.cancelled["2"], server.ErrTransportClose)
		assert.Zero(t, h.spy.writesAfterClose.Load(), "nothing may be written into the dead transport")
		require.Len(t, h.obs.ended, 1)
		assert.ErrorIs(t, h.obs.ended[0], server.ErrTransportClose)
	})
}

// Ported from python-sdk #2306, test_server_handles_transport_close_with_pending_server_to_client_requests:
// handlers blocked in roots/list, which the client never answers, when the
// transport closes. Each wakes with a connection-closed error, the pending
// table is failed from a snapshot (each entry reported once), no response is
// written into the dead transport, and Serve returns.
func TestSeedTransportCloseWithPendingClientRequests(t *testing.T) {
	for _, n := range []int{2, 50} {
		t.Run(fmt.Sprintf("%d handlers", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { seedPendingClientRequests(t, n) })
		})
	}
}

func seedPendingClientRequests(t *testing.T, n int) {
	h := newHarness(t)
	errs := make(chan error, n)
	h.addTool("roots", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		_, err := server.ListRoots(ctx)
		errs <- err
		return nil, err
	})
	h.start()
	h.Initialize(protocol.Version20251125, map[string]any{"roots": map[string]any{}})
	for i := range n {
		h.SendCallTool(int64(i+2), "roots", `{}`)
	}
	// Take the n roots/list requests off the wire without answering them:
	// every handler is now provably parked waiting for the client.
	for range n {
		req, ok := h.Recv().(*transport.Request)
		require.True(t, ok)
		require.Equal(t, "roots/list", req.Method)
	}
	synctest.Wait()
	sessions := h.srv.Sessions()
	require.Len(t, sessions, 1)
	require.Len(t, sessions[0].Pending(), 2*n, "n handlers and n outgoing requests")

	require.NoError(t, h.Close())
	require.NoError(t, h.Wait())

	close(errs)
	got := 0
	for err := range errs {
		got++
		require.ErrorIs(t, err, server.ErrConnectionClosed)
		require.ErrorIs(t, err, server.ErrTransportClose)
	}
	assert.Equal(t, n, got)
	assert.Len(t, h.obs.outgoing, n, "each pending server-to-client request is failed and reported once")
	drops := h.obs.snapshotDrops()
	assert.Len(t, drops, n)
	for _, d := range drops {
		assert.Equal(t, protocol.DropWriterClosed, d.Reason)
	}
	assert.Zero(t, h.spy.writesAfterClose.Load())
	assert.Empty(t, sessions[0].Pending())
}

// A handler that ignores cancellation and returns after the transport
// closed: Serve waits for it, its response is dropped (reason writer_closed)
// and reported once, nothing is written, nothing is logged at error level.
func TestLateResponseAfterCloseIsDroppedWriterClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		started, release := make(chan struct{}), make(chan struct{})
		h.addTool("late", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			close(started)
			<-release // ignores its context
			return server.Text("too late"), nil
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.SendCallTool(2, "late", `{}`)
		<-started
		require.NoError(t, h.Close())
		synctest.Wait()
		select {
		case <-h.Done():
			t.Fatalf("Serve returned (%v) while a handler was still running", h.Wait())
		default:
		}
		close(release)
		require.NoError(t, h.Wait())

		assert.Equal(t, []drop{{"2", protocol.DropWriterClosed}}, h.obs.snapshotDrops())
		assert.Zero(t, h.spy.writesAfterClose.Load())
		assert.Zero(t, h.logs.count(slog.LevelError))
	})
}

// The peer closed its end first: a real os.Pipe whose reader is closed. The
// write fails with EPIPE, classified peer_gone; the response is dropped once
// with that reason; later requests are read and dropped without running;
// the session ends cleanly at end of input. No error-level log.
func TestLateResponseToVanishedPeerIsPeerGone(t *testing.T) {
	testkit.Watchdog(t)
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	defer func() { _ = inW.Close() }()

	h := newHarness(t)
	ran := make(chan struct{}, 10)
	h.addTool("echo", func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		ran <- struct{}{}
		return server.Text(string(req.Arguments)), nil
	})
	served := make(chan error, 1)
	go func() { served <- h.srv.Serve(context.Background(), stdio.New(inR, outW)) }()

	lines := bufio.NewReader(outR)
	writeLine := func(s string) {
		_, err := inW.WriteString(s + "\n")
		require.NoError(t, err)
	}
	writeLine(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	line, err := lines.ReadBytes('\n')
	require.NoError(t, err)
	require.Contains(t, string(line), `"id":1,"result"`)

	require.NoError(t, outR.Close()) // the client stops reading: its end is gone
	writeLine(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	d := <-h.obs.dropped
	assert.Equal(t, drop{"2", protocol.DropPeerGone}, d)
	<-ran

	writeLine(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	d = <-h.obs.dropped
	assert.Equal(t, drop{"3", protocol.DropPeerGone}, d)
	select {
	case <-ran:
		t.Fatal("a request was run after the writer broke")
	default:
	}

	require.NoError(t, inW.Close())
	require.NoError(t, <-served)
	h.obs.mu.Lock()
	assert.Equal(t, []protocol.DropReason{protocol.DropPeerGone}, h.obs.writes)
	h.obs.mu.Unlock()
	assert.Zero(t, h.logs.count(slog.LevelError))
}

// Client cancellation: the handler's context ends with ErrClientCancel (and
// the reason), no response is sent, the drop is reported as cancelled.
func TestClientCancelStopsHandlerWithoutResponse(t *testing.T) {
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
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.SendCallTool(7, "block", `{}`)
		<-started
		h.Cancel(7, "user pressed stop")
		cause := <-causes
		require.ErrorIs(t, cause, server.ErrClientCancel)
		assert.Contains(t, cause.Error(), "user pressed stop")
		assert.Equal(t, protocol.ReasonClientCancel, server.ReasonOfCause(cause))

		synctest.Wait()
		h.Request(8, "ping", nil)
		h.RecvResult(8) // the next message is the ping's answer: nothing came for 7
		assert.Equal(t, []drop{{"7", protocol.DropCancelled}}, h.obs.snapshotDrops())

		// Cancels for finished and unknown ids are ignored.
		h.Cancel(7, "again")
		h.Cancel(999, "never existed")
		h.Request(9, "ping", nil)
		h.RecvResult(9)

		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
		assert.Len(t, h.obs.snapshotDrops(), 1)
	})
}

// initialize is never cancelled: a cancel for its id is ignored.
func TestInitializeIsNotCancellable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t).start()
		h.Request(1, "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
		sent := make(chan struct{})
		go func() { defer close(sent); h.Cancel(1, "changed my mind") }() // the pipe is unbuffered
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		require.NoError(t, json.Unmarshal(h.RecvResult(1), &res))
		assert.Equal(t, "2025-06-18", res.ProtocolVersion)
		<-sent
		h.Request(2, "ping", nil)
		h.RecvResult(2)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
		assert.Empty(t, h.obs.snapshotDrops())
	})
}

// The first cause wins: a client cancel after the transport closed does not
// relabel the request.
func TestFirstCauseWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithCallTimeout(time.Hour))
		started := make(chan struct{})
		causes := make(chan error, 1)
		h.addTool("block", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, ctx.Err()
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.SendCallTool(2, "block", `{}`)
		<-started
		require.NoError(t, h.srv.Close())
		require.ErrorIs(t, <-causes, server.ErrShutdown)
		require.ErrorIs(t, h.Wait(), server.ErrServerClosed)
		assert.Equal(t, []drop{{"2", protocol.DropShutdown}}, h.obs.snapshotDrops())
	})
}
