package middleware_test

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/server"
)

// panicObserver counts the panics the core reports.
type panicObserver struct {
	n atomic.Int64
}

func (o *panicObserver) HandlerPanicked(context.Context, *server.Request, any, []byte) { o.n.Add(1) }

// TestRecover makes a tool panic under Metrics, an error-capturing
// middleware and (or not) Recover: the client gets the same -32603 either
// way, Metrics counts an error, and the session serves on; with Recover the
// middleware outside it see a *PanicError, the panic is logged with its
// stack, and the core's last-resort recovery (its Observer) is not needed.
func TestRecover(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		recover       func(*slog.Logger) server.Middleware // nil: no Recover
		wantReturned  bool                                 // the outer middleware saw a return
		wantObserved  int64                                // panics the core recovered
		wantLogPrefix string                               // the one record logged, up to the stack
	}{
		{
			name:          "Recover",
			recover:       middleware.Recover,
			wantReturned:  true,
			wantLogPrefix: "ERROR handler panicked method=tools/call id=2 panic=boom stack=goroutine ",
		},
		{
			name:          "Recover with a nil logger",
			recover:       func(*slog.Logger) server.Middleware { return middleware.Recover(nil) },
			wantReturned:  true,
			wantObserved:  0,
			wantLogPrefix: "",
		},
		{
			name:         "no Recover: the core recovers as a last resort",
			wantObserved: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				logs := newCapture(slog.LevelDebug)
				var returned atomic.Bool
				var seen error
				outer := func(next server.Handler) server.Handler {
					return func(ctx context.Context, req *server.Request) (any, error) {
						res, err := next(ctx, req)
						if req.Name == "panic" {
							returned.Store(true)
							seen = err
						}
						return res, err
					}
				}
				extra := []server.Middleware{outer}
				if tt.recover != nil {
					extra = append(extra, tt.recover(slog.New(logs)))
				}
				obs := &panicObserver{}
				r := newRig(t, extra, server.WithObserver(server.Observer{HandlerPanicked: obs.HandlerPanicked})).start(nil)
				r.Initialize("", nil)

				r.SendCallTool(2, "panic", nil)
				resp := r.RecvResponseTo(2)
				require.NotNil(t, resp.Error)
				assert.Equal(t, int64(protocol.CodeInternal), resp.Error.Code)
				assert.Equal(t, "internal error", resp.Error.Message)
				assert.Empty(t, resp.Error.Data)

				r.SendCallTool(3, "echo", nil) // the session serves on
				require.Nil(t, r.RecvResponseTo(3).Error)
				r.close()

				assert.Equal(t, tt.wantReturned, returned.Load())
				if tt.wantReturned {
					pe, ok := errors.AsType[*middleware.PanicError](seen)
					require.True(t, ok, "%v", seen)
					assert.Equal(t, "boom", pe.Value)
					assert.Contains(t, string(pe.Stack), "rig_test.go")
					assert.Equal(t, "panic: boom", pe.Error())
					assert.Equal(t, protocol.CodeInternal, server.CodeOf(seen))
				}
				assert.Equal(t, tt.wantObserved, obs.n.Load())
				lines := logs.lines()
				if tt.wantLogPrefix == "" {
					assert.Empty(t, lines)
				} else {
					require.Len(t, lines, 1)
					assert.True(t, strings.HasPrefix(lines[0], tt.wantLogPrefix), lines[0])
					assert.Contains(t, lines[0], "rig_test.go")
				}
				got := series(t, r.m, "_messages_total", "_bytes_total", "session")
				want := map[string]float64{
					finished("-32603", "panic", "tools/call", "error"): 1,
					durCount("panic", "tools/call"):                    1,
					finished("", "echo", "tools/call", "ok"):           1,
					durCount("echo", "tools/call"):                     1,
				}
				assert.Equal(t, want, pick(got, slices.Collect(maps.Keys(want))...))
			})
		})
	}
}
