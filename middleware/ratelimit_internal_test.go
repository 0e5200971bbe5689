package middleware

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRateBucketsRefillAndRetryAfter drives one limiter in explicit time:
// a burst, a refusal whose retry is the time to the next token, and the
// token there once that time passed.
func TestRateBucketsRefillAndRetryAfter(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_000_000, 0)
	now := t0
	l := newRateLimiter(configure([]InstrumentationOption{WithRateLimit(2, 4)}, InstrumentationOption.applyInstrumentation), nil)
	l.now = func() time.Time { return now }
	key := bucketKey{principal: "alice"}
	for i := range 4 {
		ok, _ := l.allow(t.Context(), key, l.principal)
		require.True(t, ok, "request %d is within the burst", i)
	}
	ok, retry := l.allow(t.Context(), key, l.principal)
	require.False(t, ok)
	assert.InDelta(t, 500*time.Millisecond, retry, float64(time.Millisecond), "one token every 1/2 s")
	assert.Equal(t, int64(1), retrySeconds(retry))

	now = t0.Add(499 * time.Millisecond)
	ok, _ = l.allow(t.Context(), key, l.principal)
	assert.False(t, ok, "not yet")
	now = t0.Add(time.Second)
	ok, _ = l.allow(t.Context(), key, l.principal)
	assert.True(t, ok, "the token is there")
	ok, _ = l.allow(t.Context(), bucketKey{principal: "bob"}, l.principal)
	assert.True(t, ok, "another principal has its own bucket")
}

// TestRateBucketsBounded floods the table with ever new principals: it
// never holds more than its bound, and a principal still in its bucket's
// debt stays refused while idle ones are evicted first.
func TestRateBucketsBounded(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	s := newRateSpec(0.001, 2)
	tb := bucketTable{max: 64}
	hot := tb.get(bucketKey{principal: "hot"}, s, now)
	require.True(t, hot.AllowN(now, 2))
	for i := range 10_000 {
		b := tb.get(bucketKey{principal: "p" + strconv.Itoa(i)}, s, now)
		require.LessOrEqual(t, tb.len(), 64)
		if i%2 == 0 {
			b.AllowN(now, 1) // half the newcomers spend a token: not full
		}
	}
	assert.LessOrEqual(t, tb.len(), 64)

	// Only full buckets go while they are enough to make room.
	tb2 := bucketTable{max: 8}
	debtor := tb2.get(bucketKey{principal: "debtor"}, s, now)
	require.True(t, debtor.AllowN(now, 2))
	for i := range 7 {
		tb2.get(bucketKey{principal: "idle" + strconv.Itoa(i)}, s, now)
	}
	require.Equal(t, 8, tb2.len())
	tb2.get(bucketKey{principal: "new"}, s, now)
	assert.Equal(t, 2, tb2.len(), "the seven idle buckets went")
	assert.Same(t, debtor, tb2.get(bucketKey{principal: "debtor"}, s, now), "the debtor's bucket was kept")
}

// TestRateLimitKeysBounded: a long principal is hashed in its bucket's
// key, a short one kept; two long ones stay apart.
func TestRateLimitKeysBounded(t *testing.T) {
	t.Parallel()
	long := string(make([]byte, 10_000))
	assert.Len(t, boundKey(long), len("sha256:")+64)
	assert.NotEqual(t, boundKey(long), boundKey(long+"x"))
	assert.Equal(t, "192.0.2.1", boundKey("192.0.2.1"))
	assert.Equal(t, "t:echo\x00192.0.2.1", sharedKey(bucketKey{principal: "192.0.2.1", tool: "echo"}))
}
