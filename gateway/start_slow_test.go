package gateway_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
)

// slowUpstream is an upstream, reached in memory, that answers
// initialize after delay (never, when negative) and serves "hello".
type slowUpstream struct {
	srv     *server.Server
	serving sync.WaitGroup
	closed  chan struct{} // ends the waits: the server reads no EOF while it initializes
}

func newSlowUpstream(t *testing.T, delay time.Duration) *slowUpstream {
	t.Helper()
	closed := make(chan struct{})
	slow := func(next server.Handler) server.Handler {
		return func(ctx context.Context, req *server.Request) (any, error) {
			if req.Method == "initialize" {
				wait := make(<-chan time.Time) // never
				if delay >= 0 {
					wait = time.After(delay)
				}
				select {
				case <-wait:
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				case <-closed:
					return nil, errors.New("closed")
				}
			}
			return next(ctx, req)
		}
	}
	u := &slowUpstream{srv: server.New(server.WithMiddleware(slow)), closed: closed}
	require.NoError(t, u.srv.AddTool(server.Tool{Name: "hello"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return server.Text("hello"), nil
	}))
	return u
}

// dial connects a new session of the upstream.
func (u *slowUpstream) dial() transport.Conn {
	a, b := memory.NewPair()
	u.serving.Go(func() { _ = u.srv.Serve(context.Background(), b) })
	return a
}

// mountSlow mounts u with the default flags, but for its dial, without
// waiting for it.
func mountSlow(t *testing.T, u *slowUpstream, logs *syncBuffer) (*server.Server, *gateway.Gateway) {
	t.Helper()
	cfg := gateway.WithDial(gateway.Config{
		Upstreams: []gateway.Upstream{{Name: "x", URL: "http://x.invalid/mcp"}},
		Logger:    slog.New(slog.NewTextHandler(logs, nil)),
	}, u.dial)
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // Mount returns at once; the start goes on
	srv := server.New()
	g, err := gateway.Mount(ctx, srv, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = g.Close(), srv.Close()
		_ = u.srv.Close()
		close(u.closed)
		u.serving.Wait()
	})
	return srv, g
}

// TestSlowStartServedWithDefaults: an upstream that takes 95 s to
// answer initialize (npx fetching its package on a first run) is served
// with the default start timeout, and its start is logged every 10 s
// while it waits. Before, the 30 s default failed every start, forever,
// logging nothing meanwhile.
func TestSlowStartServedWithDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs syncBuffer
		u := newSlowUpstream(t, 95*time.Second)
		srv, g := mountSlow(t, u, &logs)
		start := time.Now()
		for g.Upstreams()[0].State != gateway.StateReady { // polled in fake time: a start that fails is retried forever
			require.Less(t, time.Since(start), 10*time.Minute, "not ready:\n%s", logs.String())
			time.Sleep(time.Second)
			synctest.Wait() // what is due by now is done
		}
		assert.Equal(t, 95*time.Second, time.Since(start))
		assert.Equal(t, []string{"hello"}, srv.ToolNames())
		var progress []string
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, `msg="upstream starting"`) {
				_, attrs, _ := strings.Cut(line, "upstream starting\" ")
				progress = append(progress, strings.TrimSpace(attrs))
			}
		}
		want := make([]string, 0, 9)
		for s := 10; s <= 90; s += 10 {
			want = append(want, "upstream=x waited_seconds="+strconv.Itoa(s)+" start_timeout_seconds=120")
		}
		assert.Equal(t, want, progress, logs.String())
		assert.NotContains(t, logs.String(), "did not start")
	})
}

// TestStartTimeoutNamed: a start that outlasts the start timeout is
// logged with its value and the knob that sets it, "gateway:" once.
func TestStartTimeoutNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs syncBuffer
		u := newSlowUpstream(t, -1)
		_, g := mountSlow(t, u, &logs)
		start := time.Now()
		g.AwaitState(0, gateway.StateFailing)
		assert.Equal(t, 2*time.Minute, time.Since(start))
		var failed string
		for line := range strings.Lines(logs.String()) {
			if strings.Contains(line, `msg="upstream did not start"`) {
				failed = line
			}
		}
		require.NotEmpty(t, failed, logs.String())
		assert.Contains(t, failed, "no answer within 2m0s, the start timeout (Config.StartTimeout; vigil -upstream-start-timeout)")
		assert.Equal(t, 1, strings.Count(failed, "gateway:"), failed)
	})
}
