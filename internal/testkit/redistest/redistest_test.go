package redistest_test

import (
	"context"
	"crypto/x509"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// TestStartTLS: the server speaks TLS only, with a certificate of its own
// CA; its default user is off; the vigil user logs in with its password
// and may touch vigil's keys only.
func TestStartTLS(t *testing.T) {
	s := redistest.StartTLS(t)
	ctx := t.Context()
	require.NoError(t, s.Client(t).Ping(ctx).Err(), "the administrator's client")
	assert.Equal(t, "rediss://vigil@"+s.Addr()+"/0", s.URL())

	opt, err := redis.ParseURL(s.URL())
	require.NoError(t, err)
	pem, err := os.ReadFile(s.CAFile())
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	opt.TLSConfig.RootCAs = pool
	opt.MaxRetries = -1

	wrong := *opt
	wrong.Password = "not-" + s.Password()
	wc := redis.NewClient(&wrong)
	defer func() { _ = wc.Close() }()
	require.ErrorContains(t, wc.Ping(ctx).Err(), "WRONGPASS")

	opt.Password = s.Password()
	c := redis.NewClient(opt)
	defer func() { _ = c.Close() }()
	require.NoError(t, c.Set(ctx, "vigil:{x}:s", "v", 0).Err())
	require.ErrorContains(t, c.Set(ctx, "other", "v", 0).Err(), "NOPERM", "only vigil's keys")
	require.ErrorContains(t, c.Do(ctx, "flushall").Err(), "NOPERM", "only vigil's commands")
	require.ErrorContains(t, c.Publish(ctx, "other", "m").Err(), "NOPERM", "only vigil's channels")

	plain := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer func() { _ = plain.Close() }()
	require.Error(t, plain.Ping(ctx).Err(), "no plain TCP")

	anon := *opt
	anon.Username, anon.Password = "", ""
	ac := redis.NewClient(&anon)
	defer func() { _ = ac.Close() }()
	assert.Error(t, ac.Ping(ctx).Err(), "the default user is off")
}
