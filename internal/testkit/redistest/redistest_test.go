package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartStopRestart(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	ctx := t.Context()
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	assert.Equal(t, "v", c.Get(ctx, "k").Val())

	s.Stop()
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	require.Error(t, c.Ping(short).Err(), "stopped: no answer")

	s.Restart()
	require.NoError(t, c.Ping(ctx).Err(), "restarted on the same port")
	assert.Equal(t, "v", c.Get(ctx, "k").Val(), "Stop saved the data, Restart loaded it")
	require.NoError(t, c.Set(ctx, "k2", "v2", 0).Err())
	s.Kill()
	s.Restart()
	assert.Empty(t, c.Get(ctx, "k2").Val(), "Kill lost what came after the last save")
	assert.Equal(t, "redis://"+s.Addr()+"/0", s.URL())
}
