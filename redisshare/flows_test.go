package redisshare_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/testkit/redistest"
	"github.com/vigil-mcp/vigil/redisshare"
)

// TestFlowStore: on a Redis as deployed (TLS, the ACL user limited to
// Vigil's keys and commands), two replicas share the authorizations under
// way: a flow added on one is read, given attempts, bound and ended on
// the other; an attempt is taken once; a flow keeps its newest attempts
// only; a bound flow takes no attempt until its bound one is taken; the
// flows are bounded per principal (the oldest pushed out, returned) and
// in all (refused), and expire (returned when removed); what Redis holds
// names no link, state or principal and holds no record in clear.
func TestFlowStore(t *testing.T) {
	rs := redistest.StartTLS(t)
	var replicas [2]*redisshare.FlowStore
	for i := range replicas {
		s, err := redisshare.Open(t.Context(), redisshare.Config{URL: rs.URL(), Password: rs.Password(), CAFile: rs.CAFile(), ClusterKey: redistest.ClusterKey()})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		replicas[i] = s.FlowStore()
	}
	a, b := replicas[0], replicas[1]
	ctx := t.Context()
	now := time.Now()
	exp := now.Add(10 * time.Minute)

	ok, ended, err := a.Add(ctx, "alice@example.com", "LINK-ID-1", []byte("FLOW-RECORD-1"), now, exp, 4, 2)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Empty(t, ended)
	rec, err := b.Flow(ctx, "LINK-ID-1")
	require.NoError(t, err)
	assert.Equal(t, "FLOW-RECORD-1", string(rec), "made on a, read on b")

	for i := range 6 {
		ok, err = b.AddAttempt(ctx, "LINK-ID-1", fmt.Sprint("STATE-", i), []byte(fmt.Sprint("ATTEMPT-", i)), now.Add(time.Duration(i)*time.Millisecond), 4)
		require.NoError(t, err)
		require.True(t, ok)
	}
	got, err := a.Take(ctx, "STATE-1")
	require.NoError(t, err)
	assert.Nil(t, got, "pushed out by newer ones: a flow keeps its newest 4")
	ok, err = a.AddAttempt(ctx, "NO-SUCH-LINK", "STATE-X", []byte("x"), now, 4)
	require.NoError(t, err)
	assert.False(t, ok, "no such flow")

	// One state, taken at once on both replicas: one gets it.
	var wg sync.WaitGroup
	takes := make(chan []byte, 2)
	start := make(chan struct{})
	for _, r := range replicas {
		wg.Go(func() {
			<-start
			got, err := r.Take(ctx, "STATE-5")
			assert.NoError(t, err)
			takes <- got
		})
	}
	close(start)
	wg.Wait()
	close(takes)
	var won []string
	for g := range takes {
		if g != nil {
			won = append(won, string(g))
		}
	}
	assert.Equal(t, []string{"ATTEMPT-5"}, won, "taken once over the replicas")

	ok, err = a.Bind(ctx, "LINK-ID-1", "STATE-UP", []byte("UPSTREAM-ATTEMPT"), now)
	require.NoError(t, err)
	require.True(t, ok)
	got, err = b.Take(ctx, "STATE-4")
	require.NoError(t, err)
	assert.Nil(t, got, "binding forgot the other attempts")
	ok, err = b.AddAttempt(ctx, "LINK-ID-1", "STATE-6", []byte("ATTEMPT-6"), now, 4)
	require.NoError(t, err)
	assert.False(t, ok, "bound: no new sign-in")
	ok, err = b.Bind(ctx, "LINK-ID-1", "STATE-UP2", []byte("x"), now)
	require.NoError(t, err)
	assert.False(t, ok, "bound once")

	admin := rs.Client(t)
	keys, err := admin.Keys(ctx, "vigil:connect:*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	for _, k := range keys {
		var held []string
		switch admin.Type(ctx, k).Val() {
		case "zset":
			held = admin.ZRange(ctx, k, 0, -1).Val()
		default:
			held = []string{admin.Get(ctx, k).Val()}
		}
		for _, v := range append(held, k) {
			for _, clear := range []string{"LINK-ID", "STATE", "RECORD", "ATTEMPT", "alice"} {
				assert.NotContains(t, v, clear, "key %s", k)
			}
		}
	}

	got, err = b.Take(ctx, "STATE-UP")
	require.NoError(t, err)
	assert.Equal(t, "UPSTREAM-ATTEMPT", string(got))
	ok, err = a.AddAttempt(ctx, "LINK-ID-1", "STATE-7", []byte("ATTEMPT-7"), now, 4)
	require.NoError(t, err)
	assert.True(t, ok, "its bound attempt taken, the link opens again")

	rec, err = b.End(ctx, "alice@example.com", "LINK-ID-1")
	require.NoError(t, err)
	assert.Equal(t, "FLOW-RECORD-1", string(rec))
	rec, err = a.End(ctx, "alice@example.com", "LINK-ID-1")
	require.NoError(t, err)
	assert.Nil(t, rec, "ended once: the other replica finds it gone")
	got, err = a.Take(ctx, "STATE-7")
	require.NoError(t, err)
	assert.Nil(t, got, "its attempts went with it")
	keys, err = admin.Keys(ctx, "vigil:connect:*").Result()
	require.NoError(t, err)
	assert.Empty(t, keys, "nothing left")

	// Bounds: alice holds 2 at most (her oldest pushed out), 4 in all.
	for i := range 3 {
		at := now.Add(time.Duration(i) * time.Millisecond) // made one after the other
		ok, ended, err = a.Add(ctx, "alice@example.com", fmt.Sprint("A", i), []byte(fmt.Sprint("alice ", i)), at, at.Add(10*time.Minute), 4, 2)
		require.NoError(t, err)
		require.True(t, ok)
		if i < 2 {
			assert.Empty(t, ended)
		} else {
			assert.Equal(t, [][]byte{[]byte("alice 0")}, ended, "her oldest pushed out")
		}
	}
	for i := range 2 {
		ok, _, err = b.Add(ctx, fmt.Sprint("user", i), fmt.Sprint("U", i), []byte("u"), now, exp, 4, 2)
		require.NoError(t, err)
		require.True(t, ok)
	}
	ok, _, err = b.Add(ctx, "carol", "C0", []byte("c"), now, exp, 4, 2)
	require.NoError(t, err)
	assert.False(t, ok, "4 in all")
	at := now.Add(3 * time.Millisecond)
	ok, ended, err = b.Add(ctx, "alice@example.com", "A3", []byte("alice 3"), at, at.Add(10*time.Minute), 4, 2)
	require.NoError(t, err)
	assert.True(t, ok, "alice's newest pushes her oldest out")
	assert.Equal(t, [][]byte{[]byte("alice 1")}, ended)

	// Expiry: past exp, every flow is removed by the next Add, returned.
	later := exp.Add(time.Minute)
	ok, ended, err = a.Add(ctx, "carol", "C1", []byte("c"), later, later.Add(10*time.Minute), 4, 2)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Len(t, ended, 4, "the four expired flows")
	ok, err = a.AddAttempt(ctx, "A3", "STATE-8", []byte("x"), later, 4)
	require.NoError(t, err)
	assert.False(t, ok, "expired")
}
