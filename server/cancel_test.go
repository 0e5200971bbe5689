package server_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A cancel racing the handler's return never yields two answers for one id,
// and every request ends in exactly one outcome: its response reached the
// client, or it was dropped. 10,000 requests, each cancelled right after it
// is sent, on real goroutines (no bubble) so the race is real.
func TestCancelRacingReturnHammer(t *testing.T) {
	testkit.Watchdog(t)
	const n = 10000
	var mu sync.Mutex
	outcomes := make(map[transport.ID]server.Outcome, n)
	allDone := make(chan struct{}) // closed when every request has its outcome
	record := func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "tools/call" {
				serverhook.Of[server.Outcome](ctx).OnDone(func(o server.Outcome) {
					mu.Lock()
					defer mu.Unlock()
					if _, dup := outcomes[req.ID]; dup {
						panic("two outcomes for " + req.ID.String())
					}
					outcomes[req.ID] = o
					if len(outcomes) == n {
						close(allDone)
					}
				})
			}
			return next(ctx, req)
		}
	}
	h := newHarness(t, server.WithMiddleware(record), server.WithMaxInFlightPerSession(0))
	h.addTool("echo", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("ok"), nil
	})
	h.start()
	h.Initialize(protocol.Version20251125, nil)

	responses := make(map[transport.ID]int, n)
	sentinel := transport.StringID("sentinel")
	sawSentinel, readerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			m, err := h.Conn().Read(context.Background())
			if err != nil {
				return
			}
			if resp, ok := m.(*transport.Response); ok {
				if resp.ID == sentinel {
					close(sawSentinel)
					continue
				}
				responses[resp.ID]++
			}
		}
	}()
	for i := int64(1); i <= n; i++ {
		h.SendCallTool(i+1, "echo", `{}`)
		h.Cancel(i+1, "race")
	}
	h.Send(&transport.Request{ID: sentinel, Method: "ping"})
	<-sawSentinel
	// Handlers run concurrently, so the ping's answer may overtake the last
	// calls': closing before they all ended would drop them as peer_gone.
	<-allDone
	require.NoError(t, h.Close())
	require.NoError(t, h.Wait())
	<-readerDone

	require.Len(t, outcomes, n)
	answered, dropped := 0, 0
	for id, o := range outcomes {
		got := responses[id]
		require.LessOrEqual(t, got, 1, "two responses for id %s", id)
		if o.Dropped == protocol.DropNone {
			answered++
			require.Equal(t, 1, got, "id %s: answered but the client never got it", id)
		} else {
			dropped++
			require.Zero(t, got, "id %s: dropped (%s) but the client got a response", id, o.Dropped)
			require.Contains(t, []protocol.DropReason{protocol.DropCancelled, protocol.DropWriterClosed}, o.Dropped)
		}
	}
	t.Logf("%d answered before the cancel landed, %d cancelled", answered, dropped)
	assert.Equal(t, n, answered+dropped)
}

// A duplicate in-flight id gets -32600 while the first request is still
// answered correctly; the same ids in two sessions never cross.
func TestDuplicateInFlightID(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	release := make(chan struct{})
	started := make(chan string, 2)
	h.addTool("gate", func(_ context.Context, req *server.CallToolRequest) (*server.CallToolResult, error) {
		started <- req.Request.Session.ID()
		<-release
		return server.Text(string(req.Arguments)), nil
	})
	h.start()
	h.Initialize(protocol.Version20251125, nil)
	h2 := h.second()
	h2.Initialize(protocol.Version20251125, nil)

	h.SendCallTool(5, "gate", `{"who":"one"}`)
	h2.SendCallTool(5, "gate", `{"who":"two"}`)
	<-started
	<-started
	h.SendCallTool(5, "gate", `{"who":"dup"}`)
	assert.Equal(t, int64(protocol.CodeInvalidRequest), h.RecvError(5).Code)

	close(release)
	text, isErr := toolText(t, h.RecvResult(5))
	assert.False(t, isErr)
	assert.JSONEq(t, `{"who":"one"}`, text)
	text, _ = toolText(t, h2.RecvResult(5))
	assert.JSONEq(t, `{"who":"two"}`, text)

	// The id is free again once answered.
	h.SendCallTool(5, "gate", `{"who":"again"}`)
	text, _ = toolText(t, h.RecvResult(5))
	assert.JSONEq(t, `{"who":"again"}`, text)

	require.NoError(t, h.Close())
	require.NoError(t, h2.Close())
	require.NoError(t, h.Wait())
	require.NoError(t, h2.Wait())
	assert.Contains(t, h.obs.rejected, protocol.CodeInvalidRequest)
}

// A panicking handler is answered with -32603 and no detail, reported, and
// the session survives.
func TestPanicIsInternalErrorAndSessionSurvives(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	h.addTool("boom", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		panic("secret detail")
	})
	h.addTool("echo", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("still here"), nil
	})
	h.start()
	h.Initialize(protocol.Version20251125, nil)
	h.SendCallTool(2, "boom", `{}`)
	resp := h.RecvResponse()
	require.NotNil(t, resp.Error)
	assert.Equal(t, int64(protocol.CodeInternal), resp.Error.Code)
	assert.Equal(t, "internal error", resp.Error.Message)
	assert.Empty(t, resp.Error.Data)

	h.SendCallTool(3, "echo", `{}`)
	text, _ := toolText(t, h.RecvResult(3))
	assert.Equal(t, "still here", text)
	require.NoError(t, h.Close())
	require.NoError(t, h.Wait())
	assert.Equal(t, []any{"secret detail"}, h.obs.panics)
}

// A tool's plain error is a tool result with isError; a *server.Error is a
// protocol error.
func TestToolErrorsVersusProtocolErrors(t *testing.T) {
	testkit.Watchdog(t)
	h := newHarness(t)
	h.addTool("fails", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return nil, errors.New("disk full")
	})
	h.addTool("refuses", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return nil, server.Errorf(protocol.CodeInvalidParams, "bad path")
	})
	h.start()
	h.Initialize(protocol.Version20251125, nil)
	h.SendCallTool(2, "fails", `{}`)
	text, isErr := toolText(t, h.RecvResult(2))
	assert.True(t, isErr)
	assert.Equal(t, "disk full", text)
	h.SendCallTool(3, "refuses", `{}`)
	resp := h.RecvResponse()
	require.NotNil(t, resp.Error)
	assert.Equal(t, int64(protocol.CodeInvalidParams), resp.Error.Code)
	assert.Equal(t, "bad path", resp.Error.Message)
	require.NoError(t, h.Close())
	require.NoError(t, h.Wait())
}
