package oauth

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// actChain returns an act claim nesting subs, outermost first.
func actChain(subs ...string) any {
	var act any
	for i := len(subs) - 1; i >= 0; i-- {
		m := map[string]any{"sub": subs[i], "iss": "https://as.example.com"}
		if act != nil {
			m["act"] = act
		}
		act = m
	}
	return act
}

// badActs are act claims refused as invalid_token, each for one reason.
func badActs() map[string]any {
	deep := make([]string, maxActors+1)
	for i := range deep {
		deep[i] = "agent"
	}
	return map[string]any{
		"not an object":    "agent",
		"no sub":           map[string]any{"client_id": "agent"},
		"empty sub":        map[string]any{"sub": ""},
		"sub not a string": map[string]any{"sub": 7.0},
		"inner act broken": map[string]any{"sub": "agent", "act": []any{"x"}},
		"too deep":         actChain(deep...),
		"subject too long": map[string]any{"sub": strings.Repeat("a", maxActorBytes+1)},
	}
}

// The act chain (RFC 8693 §4.1) of a JWT becomes the principal's Actors,
// outermost first; a token without act has none; a chain that cannot be
// named whole is refused.
func TestJWTVerifierActors(t *testing.T) {
	t.Parallel()
	k := vtRSAKey(t, "rsa-1")
	is := vtNewIssuer(t, k)
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock)

	p, err := v.Verify(t.Context(), vtSign(t, k, is.claims(clock.Now(), func(c jwt.MapClaims) {
		c["act"] = actChain("agent", "gateway")
	})))
	require.NoError(t, err)
	assert.Equal(t, "alice", p.Subject)
	assert.Equal(t, []string{"agent", "gateway"}, p.Actors)

	p, err = v.Verify(t.Context(), vtSign(t, k, is.claims(clock.Now())))
	require.NoError(t, err)
	assert.Nil(t, p.Actors)

	full := make([]string, maxActors)
	for i := range full {
		full[i] = "agent"
	}
	p, err = v.Verify(t.Context(), vtSign(t, k, is.claims(clock.Now(), func(c jwt.MapClaims) { c["act"] = actChain(full...) })))
	require.NoError(t, err, "a chain of maxActors is accepted")
	assert.Len(t, p.Actors, maxActors)

	for name, act := range badActs() {
		t.Run(name, func(t *testing.T) {
			_, err := v.Verify(t.Context(), vtSign(t, k, is.claims(clock.Now(), func(c jwt.MapClaims) { c["act"] = act })))
			assert.Equal(t, ReasonInvalidToken, vtReason(t, err))
		})
	}
}

// An introspection answer's act chain becomes the principal's Actors
// likewise.
func TestIntrospectionActors(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	clock := vtNewClock()
	v := vtNewIntrospectionVerifier(t, in, clock)

	in.set("delegated", in.active(clock.Now(), func(a map[string]any) { a["act"] = actChain("agent", "gateway") }))
	p, err := v.Verify(t.Context(), "delegated")
	require.NoError(t, err)
	assert.Equal(t, []string{"agent", "gateway"}, p.Actors)

	in.set("direct", in.active(clock.Now()))
	p, err = v.Verify(t.Context(), "direct")
	require.NoError(t, err)
	assert.Nil(t, p.Actors)

	for name, act := range badActs() {
		t.Run(name, func(t *testing.T) {
			tok := "bad-" + strings.ReplaceAll(name, " ", "-")
			in.set(tok, in.active(clock.Now(), func(a map[string]any) { a["act"] = act }))
			_, err := v.Verify(t.Context(), tok)
			assert.Equal(t, ReasonInvalidToken, vtReason(t, err))
		})
	}
}

// A forwarded request's assertion with more actors than a token may carry
// is refused.
func TestPrincipalAssertionTooManyActors(t *testing.T) {
	t.Parallel()
	rs := newAssertingServer(t, "https://mcp.example.com/mcp")
	a := map[string]any{"aud": "https://mcp.example.com/mcp", "exp": vtNewClock().Now().Add(10e9).UnixMilli(), "sub": "alice", "act": make([]string, maxActors+1)}
	data, err := json.Marshal(a)
	require.NoError(t, err)
	_, err = rs.decodeAssertion(data, vtNewClock().Now())
	assert.Equal(t, ReasonInvalidToken, vtReason(t, err))
}
