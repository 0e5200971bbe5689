package redisshare_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/gateway/accounts"
	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/redisshare"
)

var _ accounts.Store = (*redisshare.AccountStore)(nil)

// TestAccountStore: on a Redis as deployed (TLS, the ACL user limited to
// Vigil's keys and commands), the token vault's store puts with
// compare-and-set and the per-principal bound, gets, lists, deletes at a
// version, and leases one holder at a time; what Redis holds names no
// principal or upstream and holds no byte of the data in clear.
func TestAccountStore(t *testing.T) {
	rs := redistest.StartTLS(t)
	s, err := redisshare.Open(t.Context(), redisshare.Config{URL: rs.URL(), Password: rs.Password(), CAFile: rs.CAFile(), ClusterKey: redistest.ClusterKey()})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	a := s.AccountStore()
	ctx := t.Context()
	const token = "at-TOKEN-IN-CLEAR-1234567890"

	data, version, err := a.Get(ctx, "alice@example.com", "github")
	require.NoError(t, err)
	assert.Nil(t, data)
	assert.Zero(t, version)

	ok, err := a.Put(ctx, "alice@example.com", "github", []byte(token), 0, 2, time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = a.Put(ctx, "alice@example.com", "github", []byte("other"), 0, 2, time.Hour)
	require.NoError(t, err)
	assert.False(t, ok, "version 0 when there is one: refused")
	data, version, err = a.Get(ctx, "alice@example.com", "github")
	require.NoError(t, err)
	assert.Equal(t, token, string(data))
	assert.Equal(t, uint64(1), version)
	ok, err = a.Put(ctx, "alice@example.com", "github", []byte(token+"-2"), 1, 2, time.Hour)
	require.NoError(t, err)
	require.True(t, ok, "at its version")
	ok, err = a.Put(ctx, "alice@example.com", "github", []byte("stale"), 1, 2, time.Hour)
	require.NoError(t, err)
	assert.False(t, ok, "a stale version is refused")

	ok, err = a.Put(ctx, "alice@example.com", "linear", []byte("l"), 0, 2, time.Hour)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = a.Put(ctx, "alice@example.com", "jira", []byte("j"), 0, 2, time.Hour)
	require.NoError(t, err)
	assert.False(t, ok, "alice holds 2: the bound")
	ok, err = a.Put(ctx, "bob", "jira", []byte("j"), 0, 2, time.Hour)
	require.NoError(t, err)
	assert.True(t, ok, "bob is not alice")

	all, err := a.List(ctx, "alice@example.com")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"github": []byte(token + "-2"), "linear": []byte("l")}, all)

	admin := rs.Client(t)
	keys, err := admin.Keys(ctx, "vigil:accounts:*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 5, "two sets, three entries: %q", keys)
	for _, k := range keys {
		var held []string
		if typ := admin.Type(ctx, k).Val(); typ == "set" {
			held = admin.SMembers(ctx, k).Val()
		} else {
			held = []string{admin.Get(ctx, k).Val()}
		}
		for _, v := range append(held, k) {
			for _, clear := range []string{"TOKEN-IN-CLEAR", "alice", "bob", "github", "linear", "jira"} {
				assert.NotContains(t, v, clear, "key %s", k)
			}
		}
	}

	deleted, err := a.Delete(ctx, "alice@example.com", "github", 1)
	require.NoError(t, err)
	assert.False(t, deleted, "not at its version")
	deleted, err = a.Delete(ctx, "alice@example.com", "github", 0)
	require.NoError(t, err)
	assert.True(t, deleted)
	ok, err = a.Put(ctx, "alice@example.com", "jira", []byte("j"), 0, 2, time.Hour)
	require.NoError(t, err)
	assert.True(t, ok, "room again")

	lease, ok, err := a.TryLock(ctx, "alice@example.com", "jira", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = a.TryLock(ctx, "alice@example.com", "jira", time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "held")
	require.NoError(t, a.Unlock(ctx, "alice@example.com", "jira", "not the holder"))
	_, ok, err = a.TryLock(ctx, "alice@example.com", "jira", time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "still held")
	require.NoError(t, a.Unlock(ctx, "alice@example.com", "jira", lease))
	_, ok, err = a.TryLock(ctx, "alice@example.com", "jira", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok, "released")
}

// TestAccountStoreRefusesMovedEntries: an entry Redis moved to another
// principal's key (or that another cluster key sealed) fails to open: it
// reads as none, and is deleted.
func TestAccountStoreRefusesMovedEntries(t *testing.T) {
	rs := redistest.Start(t)
	s, err := redisshare.Open(t.Context(), redisshare.Config{URL: rs.URL(), ClusterKey: redistest.ClusterKey()})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	a := s.AccountStore()
	ctx := t.Context()
	for _, p := range []string{"alice", "mallory"} {
		ok, err := a.Put(ctx, p, "github", []byte("token of "+p), 0, 8, time.Hour)
		require.NoError(t, err)
		require.True(t, ok)
	}
	admin := rs.Client(t)
	keys, err := admin.Keys(ctx, "vigil:accounts:*:*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 2)
	values := []string{admin.Get(ctx, keys[0]).Val(), admin.Get(ctx, keys[1]).Val()}
	require.NoError(t, admin.Set(ctx, keys[0], values[1], 0).Err()) // swapped
	require.NoError(t, admin.Set(ctx, keys[1], values[0], 0).Err())

	for _, p := range []string{"alice", "mallory"} {
		data, _, err := a.Get(ctx, p, "github")
		require.NoError(t, err)
		assert.Nil(t, data, "%s's key holds the other's entry: refused", p)
	}
	assert.Zero(t, admin.Exists(ctx, keys...).Val(), "and deleted")
	all, err := a.List(ctx, "alice")
	require.NoError(t, err)
	assert.Empty(t, all)
	assert.False(t, bytes.Contains([]byte(values[0]), []byte("token of")))
}
