package oauth

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewVerifierMode: one VerifierConfig makes either kind of verifier,
// introspecting when IntrospectionEndpoint or ClientID is set and
// verifying JWTs otherwise; a field of the other mode is refused by
// NewVerifier, naming the field and what selects each mode, before any
// call to the authorization server.
func TestNewVerifierMode(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(as.Close)
	aud := []string{vtResource}

	jwtOnly := map[string]func(*VerifierConfig){
		"Algorithms":      func(c *VerifierConfig) { c.Algorithms = []string{"ES256"} },
		"JWKSURI":         func(c *VerifierConfig) { c.JWKSURI = as.URL + "/jwks" },
		"RefreshInterval": func(c *VerifierConfig) { c.RefreshInterval = time.Minute },
	}
	for field, set := range jwtOnly {
		for _, selector := range []VerifierConfig{
			{IntrospectionEndpoint: as.URL + "/introspect"},
			{ClientID: vtClientID},
		} {
			cfg := selector
			cfg.Issuer, cfg.Audiences = as.URL, aud
			set(&cfg)
			v, err := NewVerifier(t.Context(), cfg)
			require.Error(t, err, "%s when introspecting", field)
			assert.Nil(t, v)
			assert.Contains(t, err.Error(), "VerifierConfig."+field+" applies to JWT access tokens only")
			assert.Contains(t, err.Error(), "IntrospectionEndpoint or ClientID is set")
		}
	}

	introspectionOnly := map[string]func(*VerifierConfig){
		"ClientSecret":        func(c *VerifierConfig) { c.ClientSecret = vtSecret },
		"NegativeCacheTTL":    func(c *VerifierConfig) { c.NegativeCacheTTL = time.Minute },
		"MissRate":            func(c *VerifierConfig) { c.MissRate = 5 },
		"MissBurst":           func(c *VerifierConfig) { c.MissBurst = 5 },
		"MaxConcurrentMisses": func(c *VerifierConfig) { c.MaxConcurrentMisses = 4 },
		"MissWait":            func(c *VerifierConfig) { c.MissWait = time.Second },
	}
	for field, set := range introspectionOnly {
		cfg := VerifierConfig{Issuer: as.URL, Audiences: aud}
		set(&cfg)
		v, err := NewVerifier(t.Context(), cfg)
		require.Error(t, err, "%s for JWTs", field)
		assert.Nil(t, v)
		assert.Contains(t, err.Error(), "VerifierConfig."+field+" applies to introspection only")
		assert.Contains(t, err.Error(), "needs IntrospectionEndpoint or ClientID")
		assert.NotContains(t, err.Error(), vtSecret, "the secret is never in an error")
	}
	assert.Zero(t, hits.Load(), "a refused configuration calls nobody")

	clock := vtNewClock()
	t.Run("JWT", func(t *testing.T) {
		t.Parallel()
		k := vtRSAKey(t, "k")
		is := vtNewIssuer(t, k)
		v, err := NewVerifier(t.Context(), VerifierConfig{Issuer: is.srv.URL, Audiences: aud, now: clock.Now})
		require.NoError(t, err)
		require.NotNil(t, v.jwt)
		assert.Nil(t, v.in)
		p, err := v.Verify(t.Context(), vtSign(t, k, is.claims(clock.Now())))
		require.NoError(t, err)
		assert.Equal(t, "alice", p.Subject)
		require.NoError(t, v.Close())
		require.NoError(t, v.Close(), "Close twice")
	})
	t.Run("introspection", func(t *testing.T) {
		t.Parallel()
		in := vtNewIntrospector(t)
		in.set("opaque", in.active(clock.Now()))
		v, err := NewVerifier(t.Context(), VerifierConfig{
			IntrospectionEndpoint: in.srv.URL, ClientID: vtClientID, ClientSecret: vtSecret,
			Audiences: aud, MissRate: 5, now: clock.Now,
		})
		require.NoError(t, err)
		require.NotNil(t, v.in)
		assert.Nil(t, v.jwt)
		p, err := v.Verify(t.Context(), "opaque")
		require.NoError(t, err)
		assert.Equal(t, "alice", p.Subject)
		assert.EqualValues(t, 1, in.calls.Load())
		require.NoError(t, v.Close(), "nothing to stop")
	})
}
