package server_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
)

// callWithToken calls a tool with _meta.progressToken set to token (raw
// JSON) unless it is "".
func callWithToken(h *harness, id int64, tool, token string) {
	params := map[string]any{"name": tool, "arguments": map[string]any{}}
	if token != "" {
		params["_meta"] = map[string]any{"progressToken": rawJSON(token)}
	}
	h.Request(id, "tools/call", params)
}

// threeSteps reports 0, 50 and 100 of 100, 50 ms apart, as the conformance
// suite's test_tool_with_progress does.
func threeSteps(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
	for i, msg := range []string{"start", "", "done"} {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		if err := server.ReportProgress(ctx, float64(50*i), 100, msg); err != nil {
			return nil, err
		}
	}
	return server.Text("finished"), nil
}

func TestProgressHappyPath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		token string // raw JSON
		echo  string // how the notifications carry it
	}{
		{name: "string token", token: `"tok-1"`, echo: `"tok-1"`},
		{name: "integer token", token: `42`, echo: `42`},
		{name: "negative integer", token: `-7`, echo: `-7`},
		{name: "escaped string kept as sent", token: `"a\u00e9"`, echo: `"aé"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				h.addTool("steps", threeSteps)
				h.start()
				h.Initialize(protocol.Version20251125, nil)
				callWithToken(h, 2, "steps", tc.token)
				first := notificationParams(t, h, "notifications/progress")
				assert.JSONEq(t, `{"progressToken":`+tc.echo+`,"progress":0,"total":100,"message":"start"}`, first)
				assert.Contains(t, first, `"progressToken":`+tc.token, "the token's bytes are echoed")
				assert.JSONEq(t, `{"progressToken":`+tc.echo+`,"progress":50,"total":100}`, notificationParams(t, h, "notifications/progress"))
				assert.JSONEq(t, `{"progressToken":`+tc.echo+`,"progress":100,"total":100,"message":"done"}`, notificationParams(t, h, "notifications/progress"))
				text, _ := toolText(t, h.RecvResult(2))
				assert.Equal(t, "finished", text)
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

// Without a token, or with a null one, nothing is sent.
func TestProgressWithoutTokenIsNoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.addTool("steps", threeSteps)
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		callWithToken(h, 2, "steps", "")
		h.RecvResult(2)
		callWithToken(h, 3, "steps", "null")
		h.RecvResult(3)
		assert.NoError(t, server.ReportProgress(context.Background(), 1, 0, "no request"))
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

func TestProgressMustIncrease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithProgressInterval(0))
		errs := make(chan error, 5)
		h.addTool("bumpy", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			for _, p := range []float64{5, 5, 4, 6, 6.5} {
				errs <- server.ReportProgress(ctx, p, 0, "")
			}
			return server.Text("ok"), nil
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		callWithToken(h, 2, "bumpy", `"b"`)
		assert.JSONEq(t, `{"progressToken":"b","progress":5}`, notificationParams(t, h, "notifications/progress"))
		assert.JSONEq(t, `{"progressToken":"b","progress":6}`, notificationParams(t, h, "notifications/progress"))
		assert.JSONEq(t, `{"progressToken":"b","progress":6.5}`, notificationParams(t, h, "notifications/progress"))
		h.RecvResult(2)
		require.NoError(t, <-errs)
		require.ErrorIs(t, <-errs, server.ErrProgressNotIncreasing)
		require.ErrorIs(t, <-errs, server.ErrProgressNotIncreasing)
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// Updates closer than the interval are dropped, except the final one.
func TestProgressRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, server.WithProgressInterval(100*time.Millisecond))
		h.addTool("fast", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			for _, step := range []struct {
				wait     time.Duration
				progress float64
			}{{0, 1}, {0, 2}, {50 * time.Millisecond, 3}, {50 * time.Millisecond, 4}, {10 * time.Millisecond, 5}, {0, 10}} {
				time.Sleep(step.wait)
				if err := server.ReportProgress(ctx, step.progress, 10, ""); err != nil {
					return nil, err
				}
			}
			return server.Text("ok"), nil
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		callWithToken(h, 2, "fast", `1`)
		for _, want := range []string{"1", "4", "10"} {
			assert.JSONEq(t, `{"progressToken":1,"progress":`+want+`,"total":10}`, notificationParams(t, h, "notifications/progress"))
		}
		h.RecvResult(2)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// Progress reported with a context kept past the request sends nothing.
func TestProgressAfterCompletionIsNoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		kept := make(chan context.Context, 1)
		h.addTool("keep", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			if err := server.ReportProgress(ctx, 1, 2, ""); err != nil {
				return nil, err
			}
			kept <- ctx
			return server.Text("kept"), nil
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		callWithToken(h, 2, "keep", `"k"`)
		assert.JSONEq(t, `{"progressToken":"k","progress":1,"total":2}`, notificationParams(t, h, "notifications/progress"))
		h.RecvResult(2)
		ctx := <-kept
		require.NoError(t, server.ReportProgress(ctx, 2, 2, "late"))
		h.Request(3, "ping", nil)
		h.RecvResult(3) // the next message is the ping's answer: no notification
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// A token in use by a request in flight cannot be used by another; it is
// free again once that request is answered.
func TestProgressTokenInUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		started, release := make(chan struct{}), make(chan struct{})
		h.addTool("wait", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			started <- struct{}{}
			<-release
			return server.Text("waited"), nil
		})
		h.addTool("quick", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("quick"), nil
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		callWithToken(h, 2, "wait", `"shared"`)
		<-started

		callWithToken(h, 3, "quick", `"shared"`)
		resp := h.RecvResponse()
		require.Equal(t, transport.Int64ID(3), resp.ID)
		require.NotNil(t, resp.Error)
		assert.Equal(t, int64(protocol.CodeInvalidParams), resp.Error.Code)
		assert.Equal(t, "progress token already in use by another request in flight", resp.Error.Message)

		h.Request(4, "tools/list", map[string]any{"_meta": map[string]any{"progressToken": "shared"}})
		assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvError(4).Code, "every method is checked")

		callWithToken(h, 5, "quick", `"other"`)
		h.RecvResult(5)

		close(release)
		h.RecvResult(2)
		callWithToken(h, 6, "quick", `"shared"`) // free again
		h.RecvResult(6)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}

// The string "1" and the number 1 are different tokens; 1 and 1.0 are the
// same.
func TestProgressTokenIdentity(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second string
		clash         bool
	}{
		{name: "string and number differ", first: `"1"`, second: `1`},
		{name: "same number", first: `1`, second: `1`, clash: true},
		{name: "integral float is the integer", first: `1`, second: `1.0`, clash: true},
		{name: "escapes are decoded", first: `"é"`, second: `"\u00e9"`, clash: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				started, release := make(chan struct{}), make(chan struct{})
				h.addTool("wait", func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
					started <- struct{}{}
					<-release
					return server.Text("waited"), nil
				})
				h.start()
				h.Initialize(protocol.Version20251125, nil)
				callWithToken(h, 2, "wait", tc.first)
				<-started
				callWithToken(h, 3, "wait", tc.second)
				if tc.clash {
					assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvError(3).Code)
				} else {
					<-started
				}
				close(release)
				ids, answers := map[string]bool{}, 2
				if tc.clash {
					answers = 1
				}
				for range answers {
					resp := h.RecvResponse()
					require.Nil(t, resp.Error)
					ids[resp.ID.String()] = true
				}
				if tc.clash {
					assert.Equal(t, map[string]bool{"2": true}, ids)
				} else {
					assert.Equal(t, map[string]bool{"2": true, "3": true}, ids, "both ran at once")
				}
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

func TestProgressInvalidToken(t *testing.T) {
	for _, token := range []string{`true`, `{"a":1}`, `[1]`, `1.5`, `1e400`} {
		t.Run(token, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t)
				h.addTool("steps", threeSteps)
				h.start()
				h.Initialize(protocol.Version20251125, nil)
				callWithToken(h, 2, "steps", token)
				assert.Equal(t, int64(protocol.CodeInvalidParams), h.RecvError(2).Code)
				require.NoError(t, h.Close())
				require.NoError(t, h.Wait())
			})
		})
	}
}

// A cancelled request sends no more progress.
func TestProgressStopsWhenCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		errs := make(chan error, 1)
		h.addTool("long", func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
			if err := server.ReportProgress(ctx, 1, 0, ""); err != nil {
				return nil, err
			}
			<-ctx.Done()
			errs <- server.ReportProgress(ctx, 2, 0, "")
			return nil, context.Cause(ctx)
		})
		h.start()
		h.Initialize(protocol.Version20251125, nil)
		callWithToken(h, 2, "long", `"c"`)
		assert.JSONEq(t, `{"progressToken":"c","progress":1}`, notificationParams(t, h, "notifications/progress"))
		h.Cancel(2, "stop")
		require.NoError(t, <-errs)
		h.Request(3, "ping", nil)
		h.RecvResult(3) // neither progress nor a response for 2
		d := <-h.obs.dropped
		assert.Equal(t, "2", d.ID)
		require.NoError(t, h.Close())
		require.NoError(t, h.Wait())
	})
}
