package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/internal/testkit"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// TestOutcomeCarriesResultAndError checks what OnDone callbacks see: the
// chain's result on success, its error (and no result) on failure, the
// error or panic of a notification's handler, which is never answered, and
// that every callback runs, in order, past the two kept inline, each with
// the same end time, not before the request was received.
func TestOutcomeCarriesResultAndError(t *testing.T) {
	testkit.Watchdog(t)
	type seen struct {
		method   string
		order    []int
		ends     []time.Time
		received time.Time
		out      server.Outcome
	}
	seenc := make(chan seen, 8)
	record := func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "initialize" || req.Method == "notifications/initialized" {
				return next(ctx, req)
			}
			var order []int
			var ends []time.Time
			for i := range 3 {
				serverhook.Of[server.Outcome](ctx).OnDone(func(out server.Outcome) {
					order = append(order, i)
					ends = append(ends, out.Ended)
					if i == 2 {
						seenc <- seen{method: req.Method, order: order, ends: ends, received: req.Received, out: out}
					}
				})
			}
			return next(ctx, req)
		}
	}
	failing := func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			switch req.Method {
			case "notifications/roots/list_changed":
				return nil, errors.New("scripted failure")
			case "notifications/progress":
				panic("scripted panic")
			}
			return next(ctx, req)
		}
	}
	h := newHarness(t, server.WithMiddleware(record, failing))
	h.addTool("echo", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hi"), nil
	})
	h.start()
	h.Initialize(protocol.Version20251125, nil)

	h.SendCallTool(2, "echo", `{}`)
	h.RecvResult(2)
	got := <-seenc
	assert.Equal(t, []int{0, 1, 2}, got.order)
	require.False(t, got.out.Ended.IsZero(), "an answered request's Outcome has its end time")
	assert.Equal(t, []time.Time{got.out.Ended, got.out.Ended, got.out.Ended}, got.ends, "every OnDone function sees the same end")
	assert.False(t, got.out.Ended.Before(got.received), "ended %v before it was received %v", got.out.Ended, got.received)
	require.NoError(t, got.out.Err)
	res, ok := got.out.Result.(*server.CallToolResult)
	require.True(t, ok, "result %T", got.out.Result)
	assert.Equal(t, server.Text("hi").Content, res.Content)

	h.SendCallTool(3, "missing", `{}`)
	assert.NotNil(t, h.RecvResponse().Error)
	got = <-seenc
	assert.Equal(t, protocol.CodeInvalidParams, server.CodeOf(got.out.Err))
	assert.Nil(t, got.out.Result)

	h.Notify("notifications/roots/list_changed", nil)
	got = <-seenc
	assert.Equal(t, "notifications/roots/list_changed", got.method)
	assert.False(t, got.out.Ended.IsZero(), "a notification's Outcome has its end time")
	require.EqualError(t, got.out.Err, "scripted failure")
	assert.Nil(t, got.out.Result)
	assert.Empty(t, got.out.Dropped)

	h.Notify("notifications/progress", map[string]any{"progressToken": "x", "progress": 1})
	got = <-seenc
	assert.Equal(t, protocol.CodeInternal, server.CodeOf(got.out.Err), "a notification's panic is an internal error")

	require.NoError(t, h.Close())
	require.NoError(t, h.Wait())
}
