package oauth

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// TestVerdictCacheShare: one principal verifying ever new tokens (a
// client minting them) cannot push another principal's cached verdicts
// out: it holds at most an eighth of each shard, its own least recently
// used tokens going first.
func TestVerdictCacheShare(t *testing.T) {
	t.Parallel()
	const size = 1024 // 64 a shard, 8 of them a principal's
	c := newVerdictCache(size)
	now := time.Now()
	alice := &auth.Principal{Issuer: "https://as", Subject: "alice", ClientID: "app"}
	mallory := &auth.Principal{Issuer: "https://as", Subject: "mallory", ClientID: "app"}
	var aliceKeys []tokenHash
	for i := range size / 16 {
		k := hashToken(fmt.Sprint("alice-", i))
		c.put(&k, alice, nil, now, now.Add(time.Hour), 0)
		aliceKeys = append(aliceKeys, k)
	}
	cached := func() int {
		n := 0
		for _, k := range aliceKeys {
			if _, _, _, ok := c.get(&k, now, 0); ok {
				n++
			}
		}
		return n
	}
	before := cached()
	require.Positive(t, before)
	for i := range 100 * size {
		k := hashToken(fmt.Sprint("mallory-", i))
		c.put(&k, mallory, nil, now, now.Add(time.Hour), 0)
	}
	assert.Equal(t, before, cached(), "none of alice's verdicts pushed out by mallory's")
	assert.LessOrEqual(t, c.len(), size)
	held := 0
	for i := range c.shards {
		s := &c.shards[i]
		for el := s.ll.Front(); el != nil; el = el.Next() {
			if el.Value.(*lruEntry[verdict]).v.p == mallory {
				held++
			}
		}
		for _, hd := range s.held {
			assert.LessOrEqual(t, hd.n, size/cacheShards/cacheShare)
		}
	}
	assert.LessOrEqual(t, held, size/cacheShare, "mallory holds at most an eighth")
	t.Logf("alice keeps %d of her %d verdicts, mallory %d of %d", before, len(aliceKeys), held, 100*size)
}

// TestExchangeCacheShare: a principal exchanging for ever new audiences
// cannot push another's exchanged token out; it holds at most an eighth
// of the cache.
func TestExchangeCacheShare(t *testing.T) {
	t.Parallel()
	const size = 64
	c := newExchangeCache(size)
	now := time.Now()
	alice := &auth.Principal{Issuer: "https://as", Subject: "alice"}
	mallory := &auth.Principal{Issuer: "https://as", Subject: "mallory"}
	aliceKey := exchangeKey(alice, "alice-token", "https://api", nil)
	c.put(aliceKey, alice, "alice's", now.Add(time.Minute), now)
	for i := range 100 * size {
		c.put(exchangeKey(mallory, "mallory-token", fmt.Sprint("https://api", i), nil), mallory, "mallory's", now.Add(time.Minute), now)
	}
	tok, ok := c.get(aliceKey, now)
	assert.True(t, ok, "alice's exchanged token stays")
	assert.Equal(t, "alice's", tok)
	assert.Equal(t, 1+size/cacheShare, c.len(), "mallory holds an eighth")
}

// TestLRUShare: a holder at its share replaces its own least recently
// used entry; entries without a holder, and other holders', are evicted
// least recently used first as before; a holder whose entries all left
// has no holding.
func TestLRUShare(t *testing.T) {
	t.Parallel()
	var l lru[int]
	l.init(6, 2)
	now := time.Now()
	until := now.Add(time.Minute)
	k := func(i int) *tokenHash { h := hashToken(fmt.Sprint(i)); return &h }
	has := func(i int) bool { _, _, ok := l.get(k(i), now, 0); return ok }
	l.put(k(1), 1, until, 0, 7)
	l.put(k(2), 2, until, 0, 7)
	require.True(t, has(1)) // 2 is now holder 7's least recently used
	l.put(k(3), 3, until, 0, 7)
	assert.False(t, has(2), "holder 7's least recently used replaced")
	assert.True(t, has(1))
	assert.True(t, has(3))
	assert.Equal(t, 2, l.held[7].n)

	for i := 10; i < 14; i++ {
		l.put(k(i), i, until, 0, 0) // no holder: fills the rest
	}
	assert.Equal(t, 6, l.len())
	l.put(k(20), 20, until, 0, 8) // full: the least recently used goes, 1
	assert.Equal(t, 6, l.len())
	assert.False(t, has(1))
	assert.Equal(t, 1, l.held[7].n)

	// The same key put by another holder moves to it: holder 7, left
	// with no entry, has no holding.
	l.put(k(3), 3, until, 0, 8)
	assert.NotContains(t, l.held, lruHolder(7))
	assert.Equal(t, 2, l.held[8].n)
	n := 0
	for e := l.held[8].newest; e != nil; e = e.older {
		n++
	}
	assert.Equal(t, 2, n, "holder 8's list links its entries")

	// Expired, dropped when met: the holding goes with its last entry.
	for _, i := range []int{3, 20} {
		_, _, ok := l.get(k(i), until, 0)
		assert.False(t, ok)
	}
	assert.Empty(t, l.held)
	assert.Equal(t, 4, l.len())
}
