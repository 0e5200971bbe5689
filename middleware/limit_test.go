package middleware_test

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
)

// busyText is the error message of a call over its tool's limit.
func busyText(tool string) string {
	return `server busy: tool "` + tool + `" is at its concurrency limit`
}

// TestConcurrencyLimit drives calls of the "hold" tools (they return when
// released, or when cancelled) through Metrics and a limit, in fake time,
// and checks every answer, when it came, and the outcomes Metrics counted
// (the session ends at the client's close, canceling what still holds).
func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	type counts struct{ ok, error, cancelled float64 }
	tests := []struct {
		name string
		opts []server.Option
		run  func(t *testing.T, r *rig, g *guardTools)
		want counts // tools/call outcomes
	}{
		{
			name: "over the limit: rejected at once; other tools and methods pass",
			opts: []server.Option{server.WithConcurrencyLimit(2)},
			run: func(t *testing.T, r *rig, g *guardTools) {
				r.SendCallTool(2, "hold", nil)
				r.SendCallTool(3, "hold", nil)
				synctest.Wait()
				r.SendCallTool(4, "hold", nil)
				busy(t, r.RecvResponseTo(4), "hold")
				r.SendCallTool(5, "hold2", nil) // its own semaphore
				r.Request(6, "ping", nil)
				require.Nil(t, r.RecvResponseTo(6).Error)
				synctest.Wait()
				g.release <- struct{}{} // one of 2 and 3 returns, freeing a slot
				resp := r.Recv().(*transport.Response)
				require.Nil(t, resp.Error)
				assert.Contains(t, []transport.ID{transport.Int64ID(2), transport.Int64ID(3)}, resp.ID)
				r.SendCallTool(7, "hold", nil) // admitted: it holds until the close
				synctest.Wait()
			},
			want: counts{ok: 1, error: 1, cancelled: 3},
		},
		{
			name: "LimitWait: a slot freed in time",
			opts: []server.Option{server.WithConcurrencyLimit(1), server.WithLimitWait(time.Second)},
			run: func(t *testing.T, r *rig, g *guardTools) {
				r.SendCallTool(2, "hold", nil)
				synctest.Wait()
				r.SendCallTool(3, "hold", nil) // waits for 2's slot
				time.Sleep(999 * time.Millisecond)
				g.release <- struct{}{} // only 2 is in its handler
				assert.Equal(t, "held", text(t, r.RecvResponseTo(2)))
				synctest.Wait()
				g.release <- struct{}{}
				assert.Equal(t, "held", text(t, r.RecvResponseTo(3)))
			},
			want: counts{ok: 2},
		},
		{
			name: "LimitWait: rejected when the wait runs out",
			opts: []server.Option{server.WithConcurrencyLimit(1), server.WithLimitWait(time.Second)},
			run: func(t *testing.T, r *rig, _ *guardTools) {
				r.SendCallTool(2, "hold", nil)
				synctest.Wait()
				t0 := time.Now()
				r.SendCallTool(3, "hold", nil)
				busy(t, r.RecvResponseTo(3), "hold")
				assert.Equal(t, time.Second, time.Since(t0))
			},
			want: counts{error: 1, cancelled: 1},
		},
		{
			name: "LimitWait: a client cancel ends the wait",
			opts: []server.Option{server.WithConcurrencyLimit(1), server.WithLimitWait(time.Hour)},
			run: func(t *testing.T, r *rig, g *guardTools) {
				r.SendCallTool(2, "hold", nil)
				synctest.Wait()
				r.SendCallTool(3, "hold", nil)
				synctest.Wait()
				r.Notify("notifications/cancelled", map[string]any{"requestId": 3})
				synctest.Wait()
				g.release <- struct{}{} // 2 returns; 3 is gone, not waiting
				assert.Equal(t, "held", text(t, r.RecvResponseTo(2)))
			},
			want: counts{ok: 1, cancelled: 1},
		},
		{
			name: "Timeout outside bounds the wait",
			opts: []server.Option{
				server.WithTimeout(500 * time.Millisecond),
				server.WithConcurrencyLimit(1), server.WithLimitWait(time.Hour),
			},
			run: func(t *testing.T, r *rig, _ *guardTools) {
				t0 := time.Now()
				r.SendCallTool(2, "hold", nil)
				synctest.Wait()
				r.SendCallTool(3, "hold", nil)
				for range 2 { // the holder and the waiter time out together
					resp := r.Recv().(*transport.Response)
					require.NotNil(t, resp.Error)
					assert.Equal(t, int64(protocol.CodeRequestTimeout), resp.Error.Code)
				}
				assert.Equal(t, 500*time.Millisecond, time.Since(t0))
			},
			want: counts{error: 2},
		},
		{
			name: "LimitFor: per tool, negative is unlimited",
			opts: []server.Option{server.WithLimitFor(func(tool string) int {
				if tool == "hold" {
					return 1
				}
				return -1
			})},
			run: func(t *testing.T, r *rig, _ *guardTools) {
				r.SendCallTool(2, "hold", nil)
				synctest.Wait()
				r.SendCallTool(3, "hold", nil)
				busy(t, r.RecvResponseTo(3), "hold")
				for id := range int64(5) {
					r.SendCallTool(10+id, "hold2", nil)
				}
				synctest.Wait()
			},
			want: counts{error: 1, cancelled: 6},
		},
		{
			name: "zero is the identity",
			opts: []server.Option{server.WithConcurrencyLimit(0)},
			run: func(_ *testing.T, r *rig, _ *guardTools) {
				for id := range int64(5) {
					r.SendCallTool(10+id, "hold", nil)
				}
				synctest.Wait()
			},
			want: counts{cancelled: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, nil, tt.opts...)
				g := addGuardTools(t, r.srv) // labeled from the live registry
				r.start(nil)
				r.Initialize("", nil)
				tt.run(t, r, g)
				r.close()
				got := series(t, r.m)
				assert.Equal(t, tt.want, counts{
					ok:        finishedOutcome(got, "tools/call", "ok"),
					error:     finishedOutcome(got, "tools/call", "error"),
					cancelled: finishedOutcome(got, "tools/call", "cancelled"),
				})
			})
		})
	}
}

// busy asserts resp is the rejection of a call of tool.
func busy(t *testing.T, resp *transport.Response, tool string) {
	t.Helper()
	require.NotNil(t, resp.Error)
	assert.Equal(t, int64(protocol.CodeServerBusy), resp.Error.Code)
	assert.Equal(t, busyText(tool), resp.Error.Message)
}

// text returns the text of a tool result's only content.
func text(t *testing.T, resp *transport.Response) string {
	t.Helper()
	require.Nil(t, resp.Error)
	var res struct {
		Content []struct{ Type, Text string }
	}
	require.NoError(t, json.Unmarshal(resp.Result, &res))
	require.Len(t, res.Content, 1)
	require.Equal(t, "text", res.Content[0].Type)
	return res.Content[0].Text
}
