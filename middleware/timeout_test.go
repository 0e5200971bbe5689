package middleware_test

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// timeout is the server's options of a default timeout d and opts.
func timeout(d time.Duration, opts ...server.Option) []server.Option {
	return append([]server.Option{server.WithTimeout(d)}, opts...)
}

// TestTimeout runs one tools/call through Metrics with the server's
// timeout (server.WithTimeout, WithTimeoutFor) in fake time and checks the answer, when it came, the handler's cancellation
// cause and what Metrics counted.
func TestTimeout(t *testing.T) {
	t.Parallel()
	perTool := server.WithTimeoutFor(func(req *server.Request) time.Duration {
		switch req.Name {
		case "sleep":
			return 2 * time.Second // longer than the default
		case "cause":
			return -1 // none
		}
		return 0 // the default
	})
	tests := []struct {
		name      string
		opts      []server.Option
		tool      string
		cancelAt  time.Duration // when the client cancels; 0: never
		wantCode  int64         // 0: a result
		wantText  string        // the result's text
		wantAt    time.Duration // when the answer came
		wantCause error         // the cause the "cause" tool saw
		wantCount string        // the cancellation cause counted, "" for none
	}{
		{
			name: "the cause is ErrHandlerTimeout and the answer -32001", opts: timeout(2 * time.Second),
			tool: "cause", wantCode: -32001, wantAt: 2 * time.Second, wantCause: server.ErrHandlerTimeout, wantCount: "timeout",
		},
		{
			name: "a handler that ignores its context is answered -32001 when it returns", opts: timeout(time.Second),
			tool: "sleep", wantCode: -32001, wantAt: 1500 * time.Millisecond, wantCount: "timeout",
		},
		{
			name: "in time: the result", opts: timeout(2 * time.Second),
			tool: "sleep", wantText: "slept", wantAt: 1500 * time.Millisecond,
		},
		{
			name: "zero is the identity", opts: timeout(0),
			tool: "sleep", wantText: "slept", wantAt: 1500 * time.Millisecond,
		},
		{
			name: "negative is the identity", opts: timeout(-time.Second),
			tool: "cause", cancelAt: time.Hour, wantCause: server.ErrClientCancel, wantCount: "client_cancel",
		},
		{
			name: "TimeoutFor lengthens one tool", opts: timeout(time.Second, perTool),
			tool: "sleep", wantText: "slept", wantAt: 1500 * time.Millisecond,
		},
		{
			name: "TimeoutFor 0 keeps the default", opts: timeout(time.Second, perTool),
			tool: "block", wantCode: -32001, wantAt: time.Second, wantCount: "timeout",
		},
		{
			name: "TimeoutFor negative: no timeout", opts: timeout(time.Second, perTool),
			tool: "cause", cancelAt: time.Minute, wantCause: server.ErrClientCancel, wantCount: "client_cancel",
		},
		{
			name: "TimeoutFor without a default", opts: timeout(0, server.WithTimeoutFor(func(*server.Request) time.Duration { return 3 * time.Second })),
			tool: "block", wantCode: -32001, wantAt: 3 * time.Second, wantCount: "timeout",
		},
		{
			name: "a client cancel before the timeout keeps its cause", opts: timeout(5 * time.Second),
			tool: "cause", cancelAt: time.Second, wantCause: server.ErrClientCancel, wantCount: "client_cancel",
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
				t0 := time.Now()
				r.SendCallTool(2, tt.tool, nil)
				if tt.cancelAt > 0 {
					time.Sleep(tt.cancelAt)
					r.Notify("notifications/cancelled", map[string]any{"requestId": 2})
					synctest.Wait()
				} else {
					resp := r.RecvResponseTo(2)
					assert.Equal(t, tt.wantAt, time.Since(t0))
					if tt.wantCode != 0 {
						require.NotNil(t, resp.Error)
						assert.Equal(t, tt.wantCode, resp.Error.Code)
						assert.Equal(t, "request timed out", resp.Error.Message)
						assert.Nil(t, resp.Result)
					} else {
						require.Nil(t, resp.Error)
						assert.JSONEq(t, `{"content":[{"type":"text","text":"`+tt.wantText+`"}]}`, string(resp.Result))
					}
				}
				if tt.wantCause != nil {
					cause := <-g.causes
					require.ErrorIs(t, cause, tt.wantCause)
					if errors.Is(tt.wantCause, server.ErrHandlerTimeout) {
						assert.Same(t, server.ErrHandlerTimeout, cause, "the cause itself, not wrapped")
					}
				}
				r.close()
				got := series(t, r.m, "_messages_total", "_bytes_total")
				want := map[string]float64{}
				for _, cause := range []string{"client_cancel", "transport_close", "stream_close", "shutdown", "timeout", "upstream_closed", "other"} {
					want[cancellations("tools/call", cause)] = 0
				}
				if tt.wantCount != "" {
					want[cancellations("tools/call", tt.wantCount)] = 1
				}
				outcome, errType := "ok", ""
				switch {
				case tt.cancelAt > 0:
					outcome, errType = "cancelled", "cancelled"
				case tt.wantCode != 0:
					outcome, errType = "error", strconv.FormatInt(tt.wantCode, 10)
				}
				want[finished(errType, tt.tool, "tools/call", outcome)] = 1
				want[durCount(tt.tool, "tools/call")] = 1
				assert.Equal(t, want, pick(got, slices.Collect(maps.Keys(want))...))
			})
		})
	}
}
