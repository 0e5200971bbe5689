package middleware

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vigil-mcp/vigil/transport/protocol"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
)

// TestLimiterForgetsIdleTools checks that a tool's semaphore lives only
// while calls of it hold or wait for a slot, whatever ends the wait.
func TestLimiterForgetsIdleTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &limiter{n: 1, cfg: limitConfig{wait: time.Second}, sems: make(map[string]*toolSem)}
		ctx := context.Background()
		release, err := l.acquire(ctx, "a")
		require.NoError(t, err)
		assert.Len(t, l.sems, 1)

		_, err = l.acquire(ctx, "a") // waits a second, then busy
		assert.Equal(t, protocol.CodeServerBusy, server.CodeOf(err))
		assert.Len(t, l.sems, 1, "the holder keeps it")

		cctx, cancel := context.WithCancelCause(ctx)
		errs := make(chan error)
		go func() {
			_, err := l.acquire(cctx, "a")
			errs <- err
		}()
		synctest.Wait()
		assert.Equal(t, 2, l.sems["a"].refs, "the holder and the waiter")
		cause := errors.New("gone")
		cancel(cause)
		require.ErrorIs(t, <-errs, cause)

		_, err = l.acquire(ctx, "unknown-1") // free: taken, never released here
		require.NoError(t, err)
		release()
		assert.Equal(t, []string{"unknown-1"}, keys(l.sems))
	})
}

func keys(m map[string]*toolSem) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
