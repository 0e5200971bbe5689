package streamable_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/streamable"
)

// TestMaxSessionsRetryAfter: the 503 of an initialize at WithMaxSessions
// says, in Retry-After, how long until the first idle session can expire
// (N12), between 1 and 60 seconds; not 1 when no slot can free for
// minutes.
func TestMaxSessionsRetryAfter(t *testing.T) {
	t.Parallel()
	retryAfter := func(t *testing.T, opts ...streamable.Option) int {
		t.Helper()
		e := newHTEnv(t, nil, append(opts, streamable.WithMaxSessions(2))...)
		e.initialize(`{}`)
		e.initialize(`{}`)
		r := e.do(http.MethodPost, htInitBody(`{}`), nil)
		htRPCError(t, r, http.StatusServiceUnavailable, -32000)
		n, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After %q", r.header.Get("Retry-After"))
		return n
	}
	t.Run("idle timeout shorter than the bound", func(t *testing.T) {
		t.Parallel()
		// Both sessions were initialized: they expire 40 s after their last
		// request; the refusal comes within seconds of it.
		n := retryAfter(t, streamable.WithIdleTimeout(40*time.Second), streamable.WithInitTimeout(40*time.Second))
		assert.GreaterOrEqual(t, n, 30)
		assert.LessOrEqual(t, n, 40)
	})
	t.Run("idle timeout of minutes", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, 60, retryAfter(t, streamable.WithIdleTimeout(10*time.Minute), streamable.WithInitTimeout(10*time.Minute)))
	})
	t.Run("sessions that never expire", func(t *testing.T) {
		t.Parallel()
		assert.Equal(t, 60, retryAfter(t, streamable.WithIdleTimeout(0)))
	})
}
