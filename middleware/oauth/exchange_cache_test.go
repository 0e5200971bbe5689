package oauth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// The exchange cache holds at most its size, dropping the least recently
// used, and hands out an entry only before its deadline.
func TestExchangeCacheBounded(t *testing.T) {
	t.Parallel()
	now := time.Now()
	c := newExchangeCache(2)
	k := func(i byte) tokenHash { return tokenHash{i} }
	c.put(k(1), nil, "one", now.Add(time.Minute), now)
	c.put(k(2), nil, "two", now.Add(time.Minute), now)
	_, _ = c.get(k(1), now) // 2 is now the least recently used
	c.put(k(3), nil, "three", now.Add(time.Minute), now)
	assert.Equal(t, 2, c.len())
	_, ok := c.get(k(2), now)
	assert.False(t, ok, "dropped")
	tok, ok := c.get(k(1), now)
	assert.True(t, ok)
	assert.Equal(t, "one", tok)

	_, ok = c.get(k(3), now.Add(time.Minute))
	assert.False(t, ok, "not at its deadline")
	assert.Equal(t, 1, c.len(), "an expired entry is dropped when met")
	c.put(k(4), nil, "past", now, now)
	_, ok = c.get(k(4), now)
	assert.False(t, ok, "an entry already expired is not kept")
}

// The cache key separates subject tokens (even of one principal),
// principals, their act chains and scopes, the audiences and the scopes
// asked for; the order and repetition of scopes does not matter. It holds
// no part of the subject token.
func TestExchangeKey(t *testing.T) {
	t.Parallel()
	alice := &auth.Principal{Issuer: "https://as", Subject: "alice", ClientID: "app", Scopes: []string{"a", "b"}}
	const tok = "alice-token"
	base := exchangeKey(alice, tok, "https://api", []string{"x", "y"})
	assert.Equal(t, base, exchangeKey(alice, tok, "https://api", []string{"y", "x", "x"}))
	assert.NotContains(t, string(base[:]), "alice")
	for name, k := range map[string]tokenHash{
		"subject token": exchangeKey(alice, "alice-other-token", "https://api", []string{"x", "y"}),
		"subject":       exchangeKey(&auth.Principal{Issuer: "https://as", Subject: "bob", ClientID: "app", Scopes: []string{"a", "b"}}, tok, "https://api", []string{"x", "y"}),
		"actors":        exchangeKey(&auth.Principal{Issuer: "https://as", Subject: "alice", ClientID: "app", Scopes: []string{"a", "b"}, Actors: []string{"agent"}}, tok, "https://api", []string{"x", "y"}),
		"its scopes":    exchangeKey(&auth.Principal{Issuer: "https://as", Subject: "alice", ClientID: "app", Scopes: []string{"a"}}, tok, "https://api", []string{"x", "y"}),
		"audience":      exchangeKey(alice, tok, "https://api2", []string{"x", "y"}),
		"scopes":        exchangeKey(alice, tok, "https://api", []string{"x"}),
		"split":         exchangeKey(alice, tok, "https://api", []string{"xy"}),
	} {
		assert.NotEqual(t, base, k, name)
	}
}
