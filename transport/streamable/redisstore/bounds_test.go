package redisstore_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/streamable"
	"github.com/vigil-mcp/vigil/transport/streamable/redisstore"
)

// storedEventBytes sums the events kept for session s1 under prefix t:,
// as the store counts them (data + EventOverhead), from Redis itself.
func storedEventBytes(t *testing.T, rdb *redis.Client) (total int64, streams int) {
	t.Helper()
	ctx := t.Context()
	keys, err := rdb.Keys(ctx, "t:{s1}:e:*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		entries, err := rdb.XRange(ctx, k, "-", "+").Result()
		require.NoError(t, err)
		for _, e := range entries {
			d, _ := e.Values["d"].(string)
			total += int64(len(d)) + redisstore.EventOverhead
		}
		streams++
	}
	return total, streams
}

// A session's events are bounded in bytes over all its streams: the
// stream appended to loses its oldest events first, then the other
// streams, whose emptied keys go; the count Redis keeps matches what is
// stored; a resumption from a trimmed position is refused rather than
// replayed with a gap; an event larger than the bound is not stored.
func TestSessionEventBytesBounded(t *testing.T) {
	const budget = 1000
	st, rdb := newStore(t, redisstore.WithPrefix("t:"), redisstore.WithMaxSessionEventBytes(budget))
	ctx := t.Context()
	data := func(n int, c string) []byte { return []byte(strings.Repeat(c, n)) }

	var a []string
	for i := range 4 {
		id, err := st.Append(ctx, "s1", "a", data(300, strconv.Itoa(i)))
		require.NoError(t, err)
		a = append(a, id)
	}
	total, _ := storedEventBytes(t, rdb)
	assert.LessOrEqual(t, total, int64(budget))
	assert.Equal(t, strconv.FormatInt(total, 10), rdb.Get(ctx, "t:{s1}:eb").Val(), "the count is what is stored")
	_, _, err := st.Replay(ctx, "s1", a[0])
	require.ErrorIs(t, err, streamable.ErrUnknownEvent, "the event after a[0] was trimmed: no resumption with a gap")
	_, events, err := st.Replay(ctx, "s1", a[1])
	require.NoError(t, err, "nothing after a[1] was trimmed")
	require.Len(t, events, 2)
	assert.Equal(t, data(300, "2"), events[0].Data)
	assert.Equal(t, data(300, "3"), events[1].Data)

	// Another stream's event pushes a's out, all of them: its key goes.
	_, err = st.Append(ctx, "s1", "b", data(900, "b"))
	require.NoError(t, err)
	total, streams := storedEventBytes(t, rdb)
	assert.LessOrEqual(t, total, int64(budget))
	assert.Equal(t, 1, streams)
	assert.Equal(t, strconv.FormatInt(total, 10), rdb.Get(ctx, "t:{s1}:eb").Val())
	_, _, err = st.Replay(ctx, "s1", a[3])
	require.ErrorIs(t, err, streamable.ErrUnknownEvent)
	assert.Equal(t, []string{"b"}, rdb.SMembers(ctx, "t:{s1}:es").Val())

	_, err = st.Append(ctx, "s1", "c", data(budget, "x"))
	require.Error(t, err, "an event over the bound alone is not stored")

	// A flood over many streams stays within the bound.
	for i := range 200 {
		_, err := st.Append(ctx, "s1", "f"+strconv.Itoa(i%17), data(10+i, "y"))
		require.NoError(t, err)
	}
	total, _ = storedEventBytes(t, rdb)
	assert.LessOrEqual(t, total, int64(budget))
	assert.Equal(t, strconv.FormatInt(total, 10), rdb.Get(ctx, "t:{s1}:eb").Val())

	require.NoError(t, st.Forget(ctx, "s1"))
	assert.Zero(t, rdb.Exists(ctx, "t:{s1}:eb", "t:{s1}:es").Val(), "Forget drops the count too")
}

// A record lives for the init timeout until its first Touch (the client
// initialized), which gives it the idle timeout; storing a state does not
// renew it.
func TestRecordExpiresFastUntilTouched(t *testing.T) {
	st, rdb := newStore(t, redisstore.WithPrefix("t:"), redisstore.WithIdleTimeout(time.Hour), redisstore.WithInitTimeout(time.Minute))
	ctx := t.Context()
	require.NoError(t, st.Create(ctx, "s1", streamable.SessionRecord{Principal: "p"}))
	ttl := rdb.PTTL(ctx, "t:{s1}:s").Val()
	assert.Greater(t, ttl, 50*time.Second)
	assert.LessOrEqual(t, ttl, time.Minute)
	_, err := st.StoreState(ctx, "s1", []byte(`{"v":1}`))
	require.NoError(t, err)
	assert.LessOrEqual(t, rdb.PTTL(ctx, "t:{s1}:s").Val(), time.Minute, "a state does not renew the record")
	require.NoError(t, st.Touch(ctx, "s1"))
	assert.Greater(t, rdb.PTTL(ctx, "t:{s1}:s").Val(), 59*time.Minute)
}
