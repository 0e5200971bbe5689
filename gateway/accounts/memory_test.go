package accounts_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/accounts"
)

// TestMemoryStore: compare-and-set by version, the per-principal bound,
// the bound in all (expired entries dropped first), versioned delete,
// and a lease held by one until released or expired.
func TestMemoryStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := accounts.NewMemoryStore(3)
		ctx := t.Context()
		put := func(p, u string, version uint64, ttl time.Duration) bool {
			t.Helper()
			ok, err := m.Put(ctx, p, u, []byte(p+u), version, 2, ttl)
			require.NoError(t, err)
			return ok
		}
		require.True(t, put("alice", "a", 0, time.Hour))
		assert.False(t, put("alice", "a", 0, time.Hour), "exists")
		assert.True(t, put("alice", "a", 1, time.Hour))
		assert.False(t, put("alice", "a", 1, time.Hour), "stale")
		data, version, err := m.Get(ctx, "alice", "a")
		require.NoError(t, err)
		assert.Equal(t, "alicea", string(data))
		assert.Equal(t, uint64(2), version)
		require.True(t, put("alice", "b", 0, time.Minute))
		assert.False(t, put("alice", "c", 0, time.Hour), "alice holds 2")
		require.True(t, put("bob", "a", 0, time.Hour))
		_, err = m.Put(ctx, "carol", "a", nil, 0, 2, time.Hour)
		require.Error(t, err, "3 in all")

		time.Sleep(time.Minute) // alice's b expires
		all, err := m.List(ctx, "alice")
		require.NoError(t, err)
		assert.Equal(t, map[string][]byte{"a": []byte("alicea")}, all)
		assert.True(t, put("carol", "a", 0, time.Hour), "room after the expiry")

		deleted, err := m.Delete(ctx, "alice", "a", 1)
		require.NoError(t, err)
		assert.False(t, deleted, "not at its version")
		deleted, err = m.Delete(ctx, "alice", "a", 2)
		require.NoError(t, err)
		assert.True(t, deleted)

		lease, ok, err := m.TryLock(ctx, "bob", "a", time.Minute)
		require.NoError(t, err)
		require.True(t, ok)
		_, ok, _ = m.TryLock(ctx, "bob", "a", time.Minute)
		assert.False(t, ok, "held")
		require.NoError(t, m.Unlock(ctx, "bob", "a", "other"))
		_, ok, _ = m.TryLock(ctx, "bob", "a", time.Minute)
		assert.False(t, ok, "still held")
		require.NoError(t, m.Unlock(ctx, "bob", "a", lease))
		_, ok, _ = m.TryLock(ctx, "bob", "a", time.Minute)
		assert.True(t, ok, "released")
		time.Sleep(time.Minute)
		_, ok, _ = m.TryLock(ctx, "bob", "a", time.Minute)
		assert.True(t, ok, "expired")
	})
}
