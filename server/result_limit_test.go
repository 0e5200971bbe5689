package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/serverhook"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// A tools/call result over its bound (the server's, or the tool's own) is
// answered as a tool error naming the bound, and its outcome says so; one
// within is answered as it is; a tool without a bound has none.
func TestResultTooLarge(t *testing.T) {
	cases := []struct {
		name     string
		opts     []server.Option
		toolMax  int
		size     int
		tooLarge bool
		limit    int
	}{
		{name: "default bound", size: 5 << 20, tooLarge: true, limit: server.DefaultMaxResultBytes},
		{name: "within the default", size: 3 << 20},
		{name: "server bound", opts: []server.Option{server.WithMaxResultBytes(1000)}, size: 2000, tooLarge: true, limit: 1000},
		{name: "tool bound under the server's", opts: []server.Option{server.WithMaxResultBytes(1 << 20)}, toolMax: 100, size: 200, tooLarge: true, limit: 100},
		{name: "tool bound over the server's", opts: []server.Option{server.WithMaxResultBytes(100)}, toolMax: 10000, size: 5000},
		{name: "tool without bound", opts: []server.Option{server.WithMaxResultBytes(100)}, toolMax: -1, size: 5 << 20},
		{name: "server without bound", opts: []server.Option{server.WithMaxResultBytes(0)}, size: 5 << 20},
	}
	for _, tc := range cases {
		for _, era := range []string{"session", "stateless"} {
			t.Run(tc.name+"/"+era, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					outs := make(chan server.Outcome, 4)
					opts := append([]server.Option{server.WithMiddleware(func(next server.Handler) server.Handler {
						return func(ctx context.Context, req *server.Request) (any, error) {
							if req.Method == "tools/call" {
								serverhook.Of[server.Outcome](ctx).OnDone(func(o server.Outcome) { outs <- o })
							}
							return next(ctx, req)
						}
					})}, tc.opts...)
					h := newHarness(t, opts...)
					require.NoError(t, h.srv.AddTool(server.Tool{Name: "big", MaxResultBytes: tc.toolMax},
						func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
							return server.Text(strings.Repeat("x", tc.size)), nil
						}))
					h.start()
					if era == "session" {
						h.Initialize(protocol.Version20251125, nil)
						h.SendCallTool(2, "big", nil)
					} else {
						h.v2(2, "tools/call", nil, map[string]any{"name": "big"})
					}
					text, isErr := toolText(t, h.RecvResult(2))
					out := <-outs // sealed once the answer is written
					if tc.tooLarge {
						assert.True(t, isErr)
						assert.Contains(t, text, "result too large")
						assert.Contains(t, text, " "+itoa(tc.limit)+" bytes")
						assert.True(t, out.ResultTooLarge)
						assert.True(t, out.ToolError())
					} else {
						assert.False(t, isErr)
						assert.Len(t, text, tc.size)
						assert.False(t, out.ResultTooLarge)
					}
					require.NoError(t, h.Close())
					require.NoError(t, h.Wait())
				})
			})
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A task's result, kept for the task's life, is bounded as a call's
// answer is.
func TestTaskResultTooLarge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		tool := taskTool("big", server.TaskSupportOptional)
		tool.MaxResultBytes = 100
		require.NoError(t, h.srv.AddTool(tool, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text(strings.Repeat("x", 1000)), nil
		}))
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		h.Request(3, "tools/call", map[string]any{"name": "big", "task": map[string]any{"ttl": 60000}})
		created, _ := h.resultOf(3)
		id := decodeTask(t, created).Task.TaskID
		require.NotEmpty(t, id)
		h.Request(4, "tasks/result", map[string]any{"taskId": id})
		res, _ := h.resultOf(4)
		text, isErr := toolText(t, res)
		assert.True(t, isErr)
		assert.Contains(t, text, "result too large")
		assert.Contains(t, text, "limit of 100 bytes")
		assert.Less(t, len(res), 1000)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}
