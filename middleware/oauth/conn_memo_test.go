package oauth

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/connstate"
)

// forget drops token from c, as eviction would.
func forget(c *verdictCache, token string) {
	k := hashToken(token)
	s := c.shard(&k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.m[k]; ok {
		s.ll.Remove(el)
		delete(s.m, k)
	}
}

// TestJWTVerifierConnMemo: on a connection with a memo (streamable.ConnContext) the
// verdict for the token its client sent last is recalled without the
// cache, under the cache's rules: not past the token's expiry, not across
// a change of the key set, not for another verifier or another token.
func TestJWTVerifierConnMemo(t *testing.T) {
	t.Parallel()
	key, newKey := vtRSAKey(t, "k1"), vtECKey(t, "k2")
	is := vtNewIssuer(t, key)
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock)
	verifications := countKeyfunc(v)
	token := vtSign(t, key, is.claims(clock.Now(), func(c jwt.MapClaims) {
		c["exp"] = clock.Now().Add(2 * time.Minute).Unix()
	}))
	conn := connstate.With(t.Context(), nil)

	p1, err := v.Verify(conn, token)
	require.NoError(t, err)
	forget(v.cache, token)
	p2, err := v.Verify(conn, token)
	require.NoError(t, err)
	assert.Same(t, p1, p2)
	assert.EqualValues(t, 1, verifications.Load(), "recalled from the memo, the cache having forgotten it")

	_, err = v.Verify(t.Context(), token)
	require.NoError(t, err)
	assert.EqualValues(t, 2, verifications.Load(), "without a memo, the forgotten token is verified again")

	other := vtSign(t, key, is.claims(clock.Now(), func(c jwt.MapClaims) { c["sub"] = "bob" }))
	p3, err := v.Verify(conn, other)
	require.NoError(t, err)
	assert.Equal(t, "bob", p3.Subject, "another token is verified, not recalled")
	p4, err := v.Verify(conn, token)
	require.NoError(t, err)
	assert.Equal(t, p1.Subject, p4.Subject)

	t.Run("another verifier", func(t *testing.T) {
		is2 := vtNewIssuer(t, key) // the same key, another issuer
		v2 := vtNewJWTVerifier(t, is2, clock)
		_, err := v.Verify(conn, token)
		require.NoError(t, err)
		_, err = v2.Verify(conn, token)
		assert.Equal(t, ReasonWrongIssuer, vtReason(t, err), "v's verdict is not v2's")
	})

	t.Run("expiry", func(t *testing.T) {
		conn := connstate.With(t.Context(), nil)
		_, err := v.Verify(conn, token)
		require.NoError(t, err)
		clock.Advance(2*time.Minute + defaultLeeway + time.Second)
		defer clock.Advance(-(2*time.Minute + defaultLeeway + time.Second))
		_, err = v.Verify(conn, token)
		assert.Equal(t, ReasonExpired, vtReason(t, err), "not recalled past its expiry")
	})

	t.Run("key rotation", func(t *testing.T) {
		conn := connstate.With(t.Context(), nil)
		_, err := v.Verify(conn, token)
		require.NoError(t, err)
		is.publish(newKey)
		_, err = v.Verify(t.Context(), vtSign(t, newKey, is.claims(clock.Now()))) // refetches the set
		require.NoError(t, err)
		_, err = v.Verify(conn, token)
		assert.Equal(t, ReasonUnknownKey, vtReason(t, err), "not recalled across a new key set")
	})
}

// TestJWTVerifierConnMemoCacheDisabled: a verifier without a cache
// remembers nothing on the connection either.
func TestJWTVerifierConnMemoCacheDisabled(t *testing.T) {
	t.Parallel()
	key := vtRSAKey(t, "k")
	is := vtNewIssuer(t, key)
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock, func(c *VerifierConfig) { c.CacheSize = -1 })
	verifications := countKeyfunc(v)
	token := vtSign(t, key, is.claims(clock.Now()))
	conn := connstate.With(t.Context(), nil)
	for range 3 {
		_, err := v.Verify(conn, token)
		require.NoError(t, err)
	}
	assert.EqualValues(t, 3, verifications.Load())
	assert.Nil(t, connMemoFrom(conn).last.Load())
}

// TestIntrospectionConnMemo: an introspected token's verdict, once found
// in the cache, is recalled on its connection without the cache.
func TestIntrospectionConnMemo(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	clock := vtNewClock()
	v := vtNewIntrospectionVerifier(t, in, clock)
	in.set("opaque", in.active(clock.Now(), func(a map[string]any) { a["exp"] = clock.Now().Add(2 * time.Minute).Unix() }))
	conn := connstate.With(t.Context(), nil)
	for range 2 { // introspected, then found in the cache and remembered
		_, err := v.Verify(conn, "opaque")
		require.NoError(t, err)
	}
	forget(v.cache, "opaque")
	_, err := v.Verify(conn, "opaque")
	require.NoError(t, err)
	assert.EqualValues(t, 1, in.calls.Load(), "recalled from the memo")

	clock.Advance(2*time.Minute + time.Second) // past exp, within the leeway
	_, err = v.Verify(conn, "opaque")
	require.NoError(t, err)
	assert.EqualValues(t, 2, in.calls.Load(), "not recalled past its expiry: asked again")
}
