package redisstore_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/redisstore"
	"github.com/vigil-mcp/vigil/internal/replication"
)

// storedEventBytes sums the events kept for session s1 under prefix t:,
// as the store counts them (data + EventOverhead, and each stream key),
// from Redis itself; used is what Redis says it uses for them.
func storedEventBytes(t *testing.T, rdb *redis.Client) (total int64, streams int, used int64) {
	t.Helper()
	ctx := t.Context()
	keys, err := rdb.Keys(ctx, tKey("s1", ":e:*")).Result()
	require.NoError(t, err)
	for _, k := range keys {
		entries, err := rdb.XRange(ctx, k, "-", "+").Result()
		require.NoError(t, err)
		for _, e := range entries {
			d, _ := e.Values["d"].(string)
			total += int64(len(d)) + redisstore.EventOverhead
		}
		streams++
		total += streamKeyCost + 2*int64(len(k))
		used += rdb.MemoryUsage(ctx, k, 0).Val()
	}
	return total, streams, used
}

// streamKeyCost is redisstore's count for one stream key besides its name.
const streamKeyCost = 4800

// A session's events are bounded in bytes over all its streams: the
// stream appended to loses its oldest events first, then the other
// streams, whose emptied keys go; the count Redis keeps matches what is
// stored, and bounds what Redis uses; a resumption replays what is left;
// an event larger than the bound is not stored.
func TestSessionEventBytesBounded(t *testing.T) {
	const budget = 16 << 10
	st, rdb := newStore(t, redisstore.WithPrefix("t:"), redisstore.WithMaxSessionEventBytes(budget))
	ctx := t.Context()
	data := func(n int, c string) []byte { return []byte(strings.Repeat(c, n)) }

	var a []string
	for i := range 5 {
		id, err := st.Append(ctx, "s1", "a", data(3000, strconv.Itoa(i)))
		require.NoError(t, err)
		a = append(a, id)
	}
	total, _, _ := storedEventBytes(t, rdb)
	assert.LessOrEqual(t, total, int64(budget))
	assert.Equal(t, strconv.FormatInt(total, 10), rdb.Get(ctx, tKey("s1", ":eb")).Val(), "the count is what is stored")
	_, events, err := st.Replay(ctx, "s1", a[0])
	require.NoError(t, err)
	require.Len(t, events, 3, "what is left after a trimmed position")
	assert.Equal(t, data(3000, "2"), events[0].Data)
	_, events, err = st.Replay(ctx, "s1", a[1])
	require.NoError(t, err)
	require.Len(t, events, 3)
	assert.Equal(t, data(3000, "2"), events[0].Data)
	assert.Equal(t, data(3000, "4"), events[2].Data)

	// Another stream's event pushes a's out, all of them: its key goes.
	_, err = st.Append(ctx, "s1", "b", data(8000, "b"))
	require.NoError(t, err)
	total, streams, _ := storedEventBytes(t, rdb)
	assert.LessOrEqual(t, total, int64(budget))
	assert.Equal(t, 1, streams)
	assert.Equal(t, strconv.FormatInt(total, 10), rdb.Get(ctx, tKey("s1", ":eb")).Val())
	_, _, err = st.Replay(ctx, "s1", a[4])
	require.ErrorIs(t, err, replication.ErrUnknownEvent)
	assert.Equal(t, []string{tStream("b")}, rdb.SMembers(ctx, tKey("s1", ":es")).Val(), "the stream set holds the tags of the streams' names")
	assert.Equal(t, int64(1), rdb.Exists(ctx, tKey("s1", ":e:"+tStream("b"))).Val(), "the stream's key carries its tag")

	_, err = st.Append(ctx, "s1", "c", data(budget, "x"))
	require.Error(t, err, "an event over the bound alone is not stored")

	// A flood over many streams stays within the bound, and so does what
	// Redis uses for it.
	for i := range 400 {
		_, err := st.Append(ctx, "s1", "f"+strconv.Itoa(i%37), data(10+i*7, "y"))
		require.NoError(t, err)
	}
	total, _, used := storedEventBytes(t, rdb)
	assert.LessOrEqual(t, total, int64(budget))
	assert.LessOrEqual(t, used, int64(budget), "Redis's own count of the session's streams")
	t.Logf("counted %d bytes, Redis says %d", total, used)
	assert.Equal(t, strconv.FormatInt(total, 10), rdb.Get(ctx, tKey("s1", ":eb")).Val())

	require.NoError(t, st.Forget(ctx, "s1"))
	assert.Zero(t, rdb.Exists(ctx, tKey("s1", ":eb"), tKey("s1", ":es")).Val(), "Forget drops the count too")
}

// A record lives for the init timeout until its first Touch (the client
// initialized), which gives it the idle timeout; storing a state does not
// renew it.
func TestRecordExpiresFastUntilTouched(t *testing.T) {
	st, rdb := newStore(t, redisstore.WithPrefix("t:"))
	st.SetSessionTimeouts(time.Hour, time.Minute)
	ctx := t.Context()
	require.NoError(t, st.Create(ctx, "s1", replication.SessionRecord{Principal: "p"}))
	ttl := rdb.PTTL(ctx, tKey("s1", ":s")).Val()
	assert.Greater(t, ttl, 50*time.Second)
	assert.LessOrEqual(t, ttl, time.Minute)
	_, err := st.StoreState(ctx, "s1", []byte(`{"v":1}`))
	require.NoError(t, err)
	assert.LessOrEqual(t, rdb.PTTL(ctx, tKey("s1", ":s")).Val(), time.Minute, "a state does not renew the record")
	require.NoError(t, st.Touch(ctx, "s1"))
	assert.Greater(t, rdb.PTTL(ctx, tKey("s1", ":s")).Val(), 59*time.Minute)
}
