package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// callLog records what call middleware saw, in order.
type callLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *callLog) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *callLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// namedCallMiddleware logs around the call and, if key is set, adds it to
// the call's Meta.
func namedCallMiddleware(log *callLog, name, key string) server.CallMiddleware {
	return func(next server.CallFunc) server.CallFunc {
		return func(ctx context.Context, c *server.ClientCall) error {
			log.add("%s before %s id=%q", name, c.Method, c.ID.String())
			if key != "" {
				if c.Meta == nil {
					c.Meta = map[string]any{}
				}
				c.Meta[key] = name
			}
			err := next(ctx, c)
			log.add("%s after id=%q err=%v", name, c.ID.String(), err != nil)
			return err
		}
	}
}

func TestCallMiddlewareMergesMeta(t *testing.T) {
	tests := []struct {
		name   string
		params any
		want   string // the params on the wire
	}{
		{name: "no params", params: nil, want: `{"_meta":{"traceparent":"inner"}}`},
		{name: "object", params: map[string]any{"message": "hi"}, want: `{"_meta":{"traceparent":"inner"},"message":"hi"}`},
		{
			name:   "existing meta is kept, same key replaced",
			params: map[string]any{"_meta": map[string]any{"a": 1, "traceparent": "old"}, "message": "hi"},
			want:   `{"_meta":{"a":1,"traceparent":"inner"},"message":"hi"}`,
		},
		{name: "null meta", params: map[string]any{"_meta": nil}, want: `{"_meta":{"traceparent":"inner"}}`},
		{name: "not an object: left alone", params: []int{1, 2}, want: `[1,2]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := &callLog{}
				h := newHarness(t, server.WithCallMiddleware(
					namedCallMiddleware(log, "outer", "traceparent"),
					nil,
					namedCallMiddleware(log, "inner", "traceparent"), // inner runs last: its value wins
				))
				errs := featureTool(h, func(ctx context.Context) (string, error) {
					req := server.RequestFromContext(ctx)
					return "pinged", req.Session.Call(ctx, "ping", tt.params, nil)
				})
				h.start()
				h.Initialize("2025-11-25", nil)
				h.SendCallTool(2, "feature", map[string]any{})
				r := clientRequest(t, h, "ping")
				assert.JSONEq(t, tt.want, string(r.Params))
				answer(h, r, `{}`)
				text, isErr := toolText(t, h.RecvResult(2))
				assert.Equal(t, "pinged", text)
				assert.False(t, isErr)
				require.NoError(t, <-errs)
				finish(t, h)
				assert.Equal(t, []string{
					`outer before ping id=""`,
					`inner before ping id=""`,
					`inner after id="1" err=false`,
					`outer after id="1" err=false`,
				}, log.get())
			})
		})
	}
}

func TestCallMiddlewareSeesRefusedCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &callLog{}
		h := newHarness(t, server.WithCallMiddleware(namedCallMiddleware(log, "mw", "")))
		errs := featureTool(h, func(ctx context.Context) (string, error) {
			_, err := server.ListRoots(ctx)
			return "", err
		})
		h.start()
		h.Initialize("2025-11-25", nil) // no roots capability
		h.SendCallTool(2, "feature", map[string]any{})
		_, isErr := toolText(t, h.RecvResult(2))
		assert.True(t, isErr)
		require.ErrorIs(t, <-errs, server.ErrCapability)
		finish(t, h)
		assert.Equal(t, []string{`mw before roots/list id=""`, `mw after id="" err=true`}, log.get(), "no id: never sent")
	})
}
