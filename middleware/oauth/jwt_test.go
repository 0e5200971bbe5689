package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/connstate"
	"github.com/vigil-mcp/vigil/middleware/auth"
)

const vtResource = "https://mcp.example.com/mcp"

// vtKey is a signing key of the test issuer.
type vtKey struct {
	kid    string
	method jwt.SigningMethod
	priv   crypto.Signer
}

func vtRSAKey(t testing.TB, kid string) vtKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return vtKey{kid: kid, method: jwt.SigningMethodRS256, priv: k}
}

func vtECKey(t testing.TB, kid string) vtKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return vtKey{kid: kid, method: jwt.SigningMethodES256, priv: k}
}

// jwk returns the public JWK of k.
func (k vtKey) jwk(t testing.TB) map[string]any {
	t.Helper()
	b64 := base64.RawURLEncoding.EncodeToString
	switch pub := k.priv.Public().(type) {
	case *rsa.PublicKey:
		return map[string]any{
			"kty": "RSA", "kid": k.kid, "alg": k.method.Alg(), "use": "sig",
			"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes()),
		}
	case *ecdsa.PublicKey:
		raw, err := pub.Bytes() // 0x04 || X || Y
		require.NoError(t, err)
		return map[string]any{
			"kty": "EC", "kid": k.kid, "alg": k.method.Alg(), "use": "sig", "crv": "P-256",
			"x": b64(raw[1:33]), "y": b64(raw[33:]),
		}
	}
	t.Fatalf("unsupported key %T", k.priv)
	return nil
}

// vtIssuer is an authorization server: RFC 8414 metadata, a JWK Set that
// the test can change, counted, or take down.
type vtIssuer struct {
	t   testing.TB
	srv *httptest.Server

	mu   sync.Mutex
	keys []vtKey // published

	jwksFetches atomic.Int64
	jwksDown    atomic.Bool
	// onFetch, when set before the verifier is made, is called with the
	// number of each JWKS fetch, before it is answered.
	onFetch func(n int64)
}

func vtNewIssuer(t testing.TB, keys ...vtKey) *vtIssuer {
	t.Helper()
	is := &vtIssuer{t: t, keys: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                 is.srv.URL,
			"jwks_uri":               is.srv.URL + "/jwks",
			"introspection_endpoint": is.srv.URL + "/introspect",
			"token_endpoint":         is.srv.URL + "/token",
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		n := is.jwksFetches.Add(1)
		if is.onFetch != nil {
			is.onFetch(n)
		}
		if is.jwksDown.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		is.mu.Lock()
		set := make([]map[string]any, 0, len(is.keys))
		for _, k := range is.keys {
			set = append(set, k.jwk(t))
		}
		is.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": set})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

func (is *vtIssuer) publish(keys ...vtKey) {
	is.mu.Lock()
	is.keys = keys
	is.mu.Unlock()
}

// claims returns valid claims at now, changed by mutate.
func (is *vtIssuer) claims(now time.Time, mutate ...func(jwt.MapClaims)) jwt.MapClaims {
	c := jwt.MapClaims{
		"iss":       is.srv.URL,
		"sub":       "alice",
		"aud":       vtResource,
		"exp":       now.Add(time.Hour).Unix(),
		"iat":       now.Unix(),
		"scope":     "files:read files:write",
		"client_id": "client-1",
		"tenant":    "acme",
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func vtSign(t testing.TB, k vtKey, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(k.method, c)
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.priv)
	require.NoError(t, err)
	return s
}

// vtSignHeader signs c with k, its JOSE header changed by header (a nil
// value deletes the member).
func vtSignHeader(t testing.TB, k vtKey, c jwt.MapClaims, header map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(k.method, c)
	tok.Header["kid"] = k.kid
	for name, val := range header {
		if val == nil {
			delete(tok.Header, name)
		} else {
			tok.Header[name] = val
		}
	}
	s, err := tok.SignedString(k.priv)
	require.NoError(t, err)
	return s
}

// vtClock is a fake clock.
type vtClock struct {
	mu  sync.Mutex
	now time.Time
}

func vtNewClock() *vtClock { return &vtClock{now: time.Now().Truncate(time.Second)} }

func (c *vtClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *vtClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func vtNewJWTVerifier(t testing.TB, is *vtIssuer, clock *vtClock, mutate ...func(*VerifierConfig)) *jwtVerifier {
	t.Helper()
	cfg := VerifierConfig{
		Issuer:    is.srv.URL,
		Audiences: []string{vtResource},
		Claims:    []string{"tenant"},
		now:       clock.Now,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := NewVerifier(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = v.Close() })
	require.NotNil(t, v.jwt, "a JWT verifier")
	return v.jwt
}

// countKeyfunc makes v count its signature verifications (key lookups).
func countKeyfunc(v *jwtVerifier) *atomic.Int64 {
	var n atomic.Int64
	inner := v.keyfunc
	v.keyfunc = func(ctx context.Context) jwt.Keyfunc {
		kf := inner(ctx)
		return func(t *jwt.Token) (any, error) {
			n.Add(1)
			return kf(t)
		}
	}
	return &n
}

func vtReason(t *testing.T, err error) Reason {
	t.Helper()
	require.Error(t, err)
	var e *Error
	require.ErrorAs(t, err, &e)
	return e.Reason
}

func TestJWTVerifierAccepts(t *testing.T) {
	t.Parallel()
	rsaKey, ecKey := vtRSAKey(t, "rsa-1"), vtECKey(t, "ec-1")
	is := vtNewIssuer(t, rsaKey, ecKey)
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock)

	for _, k := range []vtKey{rsaKey, ecKey} {
		t.Run(k.kid, func(t *testing.T) {
			p, err := v.Verify(t.Context(), vtSign(t, k, is.claims(clock.Now())))
			require.NoError(t, err)
			assert.Equal(t, "alice", p.Subject)
			assert.Equal(t, is.srv.URL, p.Issuer)
			assert.Equal(t, "client-1", p.ClientID)
			assert.Equal(t, []string{"files:read", "files:write"}, p.Scopes)
			assert.True(t, p.Expiry.Equal(clock.Now().Add(time.Hour)), "expiry %v", p.Expiry)
			assert.Equal(t, map[string]any{"tenant": "acme"}, p.Claims)
		})
	}

	t.Run("scp array, azp, aud array", func(t *testing.T) {
		c := is.claims(clock.Now(), func(c jwt.MapClaims) {
			delete(c, "scope")
			delete(c, "client_id")
			delete(c, "tenant")
			c["scp"] = []string{"a", "b"}
			c["azp"] = "client-2"
			c["aud"] = []string{"https://other.example.com", vtResource}
		})
		p, err := v.Verify(t.Context(), vtSign(t, rsaKey, c))
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, p.Scopes)
		assert.Equal(t, "client-2", p.ClientID)
		assert.Nil(t, p.Claims)
	})
	t.Run("scp string", func(t *testing.T) {
		c := is.claims(clock.Now(), func(c jwt.MapClaims) { delete(c, "scope"); c["scp"] = "x y" })
		p, err := v.Verify(t.Context(), vtSign(t, rsaKey, c))
		require.NoError(t, err)
		assert.Equal(t, []string{"x", "y"}, p.Scopes)
	})
	t.Run("within leeway", func(t *testing.T) {
		c := is.claims(clock.Now(), func(c jwt.MapClaims) { c["exp"] = clock.Now().Add(-10 * time.Second).Unix() })
		_, err := v.Verify(t.Context(), vtSign(t, rsaKey, c))
		require.NoError(t, err)
	})
	// An access token's typ (RFC 9068), the "JWT" many providers use for
	// theirs, or none.
	for _, typ := range []any{nil, "JWT", "jwt", "at+jwt", "AT+JWT", "application/at+jwt", "Application/AT+JWT"} {
		t.Run(fmt.Sprintf("typ %v", typ), func(t *testing.T) {
			_, err := v.Verify(t.Context(), vtSignHeader(t, rsaKey, is.claims(clock.Now()), map[string]any{"typ": typ}))
			require.NoError(t, err)
		})
	}
}

func TestJWTVerifierRefuses(t *testing.T) {
	t.Parallel()
	rsaKey, ecKey := vtRSAKey(t, "rsa-1"), vtECKey(t, "ec-1")
	ghost := vtRSAKey(t, "ghost") // not published
	is := vtNewIssuer(t, rsaKey, ecKey)
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock)
	now := clock.Now()
	sign := func(mutate ...func(jwt.MapClaims)) string { return vtSign(t, rsaKey, is.claims(now, mutate...)) }

	valid := sign()
	parts := strings.Split(valid, ".")
	tamperedClaims := is.claims(now, func(c jwt.MapClaims) { c["sub"] = "mallory" })
	payload, err := json.Marshal(tamperedClaims)
	require.NoError(t, err)
	tampered := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]

	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, is.claims(now)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)

	// The classic confusion: HS256 keyed with the RSA public key's PEM.
	der, err := x509.MarshalPKIXPublicKey(rsaKey.priv.Public())
	require.NoError(t, err)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, is.claims(now))
	hs.Header["kid"] = rsaKey.kid
	hsToken, err := hs.SignedString(pubPEM)
	require.NoError(t, err)

	// An RS256 token naming the EC key: the JWK's alg does not fit.
	wrongKey := jwt.NewWithClaims(jwt.SigningMethodRS256, is.claims(now))
	wrongKey.Header["kid"] = ecKey.kid
	wrongKeyToken, err := wrongKey.SignedString(rsaKey.priv)
	require.NoError(t, err)

	tests := []struct {
		name  string
		token string
		want  Reason
	}{
		{"empty", "", ReasonInvalidToken},
		{"not a JWT", "not-a-jwt", ReasonInvalidToken},
		{"three garbage parts", "a.b.c", ReasonInvalidToken},
		{"alg none", none, ReasonInvalidToken},
		{"HS256 with the public key as secret", hsToken, ReasonInvalidToken},
		{"alg not the key's", wrongKeyToken, ReasonInvalidToken},
		{"tampered payload", tampered, ReasonInvalidToken},
		{"signature of another token", parts[0] + "." + parts[1] + "." + strings.Split(sign(func(c jwt.MapClaims) { c["sub"] = "bob" }), ".")[2], ReasonInvalidToken},
		{"missing sub", sign(func(c jwt.MapClaims) { delete(c, "sub") }), ReasonInvalidToken},
		{"missing exp", sign(func(c jwt.MapClaims) { delete(c, "exp") }), ReasonInvalidToken},
		{"oversized", sign(func(c jwt.MapClaims) { c["pad"] = strings.Repeat("x", maxTokenBytes) }), ReasonInvalidToken},
		{"expired", sign(func(c jwt.MapClaims) { c["exp"] = now.Add(-2 * time.Minute).Unix() }), ReasonExpired},
		{"nbf in the future", sign(func(c jwt.MapClaims) { c["nbf"] = now.Add(5 * time.Minute).Unix() }), ReasonExpired},
		{"expired and wrong issuer", sign(func(c jwt.MapClaims) {
			c["exp"] = now.Add(-2 * time.Minute).Unix()
			c["iss"] = "https://evil.example.com"
		}), ReasonExpired},
		{"wrong issuer", sign(func(c jwt.MapClaims) { c["iss"] = "https://evil.example.com" }), ReasonWrongIssuer},
		{"issuer with a trailing slash", sign(func(c jwt.MapClaims) { c["iss"] = is.srv.URL + "/" }), ReasonWrongIssuer},
		{"no issuer", sign(func(c jwt.MapClaims) { delete(c, "iss") }), ReasonWrongIssuer},
		{"other audience", sign(func(c jwt.MapClaims) { c["aud"] = "https://other.example.com/mcp" }), ReasonWrongAudience},
		{"no audience", sign(func(c jwt.MapClaims) { delete(c, "aud") }), ReasonWrongAudience},
		{"empty audience list", sign(func(c jwt.MapClaims) { c["aud"] = []string{} }), ReasonWrongAudience},
		{"unknown kid", vtSign(t, ghost, is.claims(now)), ReasonUnknownKey},
		// No critical extension is supported (RFC 7515 section 4.1.11).
		{"crit", vtSignHeader(t, rsaKey, is.claims(now), map[string]any{"crit": []string{"exp"}, "exp": 1}), ReasonInvalidToken},
		{"empty crit", vtSignHeader(t, rsaKey, is.claims(now), map[string]any{"crit": []string{}}), ReasonInvalidToken},
		{"crit and expired", vtSignHeader(t, rsaKey, is.claims(now, func(c jwt.MapClaims) { c["exp"] = now.Add(-2 * time.Minute).Unix() }),
			map[string]any{"crit": []string{"b64"}, "b64": true}), ReasonInvalidToken},
		{"crit with an unknown kid", vtSignHeader(t, ghost, is.claims(now), map[string]any{"crit": []string{"x"}}), ReasonInvalidToken},
		// Tokens of other kinds, signed by the same keys.
		{"typ dpop+jwt", vtSignHeader(t, rsaKey, is.claims(now), map[string]any{"typ": "dpop+jwt"}), ReasonInvalidToken},
		{"typ id_token+jwt", vtSignHeader(t, rsaKey, is.claims(now), map[string]any{"typ": "id_token+jwt"}), ReasonInvalidToken},
		{"typ logout+jwt", vtSignHeader(t, rsaKey, is.claims(now), map[string]any{"typ": "logout+jwt"}), ReasonInvalidToken},
		{"typ JWS", vtSignHeader(t, rsaKey, is.claims(now), map[string]any{"typ": "JWS"}), ReasonInvalidToken},
		{"typ empty", vtSignHeader(t, rsaKey, is.claims(now), map[string]any{"typ": ""}), ReasonInvalidToken},
		{"typ not a string", vtSignHeader(t, rsaKey, is.claims(now), map[string]any{"typ": 5}), ReasonInvalidToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.Verify(t.Context(), tt.token)
			assert.Nil(t, p)
			got := vtReason(t, err)
			assert.Equal(t, tt.want, got, "reason %s, error %v", got, err)
			if tt.token != "" {
				assert.NotContains(t, err.Error(), tt.token, "the error names the token")
			}
		})
	}
	_, err = v.Verify(t.Context(), valid)
	require.NoError(t, err, "the untampered token")
}

func TestNewVerifierJWTConfig(t *testing.T) {
	t.Parallel()
	is := vtNewIssuer(t, vtRSAKey(t, "k"))
	base := func() VerifierConfig { return VerifierConfig{Issuer: is.srv.URL, Audiences: []string{vtResource}} }
	tests := []struct {
		name   string
		mutate func(*VerifierConfig)
		errHas string
	}{
		{"no issuer", func(c *VerifierConfig) { c.Issuer = "" }, "Issuer"},
		{"no audience", func(c *VerifierConfig) { c.Audiences = nil }, "Audiences"},
		{"empty audience", func(c *VerifierConfig) { c.Audiences = []string{""} }, "Audiences"},
		{"HS256", func(c *VerifierConfig) { c.Algorithms = []string{"RS256", "HS256"} }, "HS256"},
		{"none", func(c *VerifierConfig) { c.Algorithms = []string{"none"} }, "none"},
		{"undiscoverable issuer", func(c *VerifierConfig) { c.Issuer = is.srv.URL + "/nowhere" }, "discover"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := base()
			tt.mutate(&cfg)
			v, err := NewVerifier(t.Context(), cfg)
			require.Error(t, err)
			assert.Nil(t, v)
			assert.Contains(t, err.Error(), tt.errHas)
		})
	}
	t.Run("discovered JWKS", func(t *testing.T) {
		t.Parallel()
		v, err := NewVerifier(t.Context(), base())
		require.NoError(t, err)
		require.NoError(t, v.Close())
		require.NoError(t, v.Close(), "Close twice")
	})
}

// TestJWTVerifierKeyRotation: the issuer replaces its key. A token of the
// new key verifies at once (the unknown kid refetches the set); tokens of
// the dropped key are refused from then on, even one verified and cached
// before.
func TestJWTVerifierKeyRotation(t *testing.T) {
	t.Parallel()
	oldKey, newKey := vtRSAKey(t, "2026-01"), vtECKey(t, "2026-02")
	is := vtNewIssuer(t, oldKey)
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock)
	require.EqualValues(t, 1, is.jwksFetches.Load(), "the set is fetched at start")

	oldToken := vtSign(t, oldKey, is.claims(clock.Now()))
	_, err := v.Verify(t.Context(), oldToken)
	require.NoError(t, err)

	is.publish(newKey)
	_, err = v.Verify(t.Context(), vtSign(t, newKey, is.claims(clock.Now())))
	require.NoError(t, err, "a token of the new key verifies at once")
	assert.EqualValues(t, 2, is.jwksFetches.Load(), "one refetch")

	_, err = v.Verify(t.Context(), oldToken)
	assert.Equal(t, ReasonUnknownKey, vtReason(t, err), "the cached token of the dropped key: %v", err)
	_, err = v.Verify(t.Context(), vtSign(t, oldKey, is.claims(clock.Now(), func(c jwt.MapClaims) { c["sub"] = "bob" })))
	assert.Equal(t, ReasonUnknownKey, vtReason(t, err), "a new token of the dropped key: %v", err)
}

// TestJWTVerifierBackgroundRefresh: the key set is refetched every
// RefreshInterval; a key the issuer dropped is refused after the next
// refresh, even for a token verified and cached before.
func TestJWTVerifierBackgroundRefresh(t *testing.T) {
	t.Parallel()
	oldKey, newKey := vtRSAKey(t, "old"), vtRSAKey(t, "new")
	is := vtNewIssuer(t, oldKey, newKey)
	// The refresh goroutine fetches one set at a time: when fetch n+1
	// starts, the set of fetch n is installed.
	var target atomic.Int64
	target.Store(-1)
	reached := make(chan struct{})
	is.onFetch = func(n int64) {
		if n == target.Load() {
			close(reached)
		}
	}
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock, func(c *VerifierConfig) { c.RefreshInterval = 10 * time.Millisecond })
	oldToken := vtSign(t, oldKey, is.claims(clock.Now()))
	_, err := v.Verify(t.Context(), oldToken)
	require.NoError(t, err)

	is.mu.Lock()
	is.keys = []vtKey{newKey}
	target.Store(is.jwksFetches.Load() + 2)
	is.mu.Unlock()
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("no background refresh")
	}
	_, err = v.Verify(t.Context(), oldToken)
	assert.Equal(t, ReasonUnknownKey, vtReason(t, err), "%v", err)
	_, err = v.Verify(t.Context(), vtSign(t, newKey, is.claims(clock.Now())))
	require.NoError(t, err)
}

// TestJWTVerifierUnknownKIDFlood: tokens with random kids make a bounded
// number of JWKS fetches, and all are refused as unknown_key.
func TestJWTVerifierUnknownKIDFlood(t *testing.T) {
	t.Parallel()
	key := vtRSAKey(t, "real")
	is := vtNewIssuer(t, key)
	v := vtNewJWTVerifier(t, is, vtNewClock())
	start := time.Now()
	const n = 500
	var wg sync.WaitGroup
	reasons := make([]Reason, n)
	claims := is.claims(time.Now())
	for i := range n {
		// Same key, random kid: signing is cheap, only the kid matters.
		tok := jwt.NewWithClaims(key.method, claims)
		tok.Header["kid"] = fmt.Sprintf("random-%d", i)
		s, err := tok.SignedString(key.priv)
		require.NoError(t, err)
		wg.Go(func() {
			_, err := v.Verify(context.Background(), s)
			reasons[i] = reasonOf(err)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i, r := range reasons {
		require.Equal(t, ReasonUnknownKey, r, "token %d", i)
	}
	// The initial fetch, the burst, then one a second.
	limit := 1 + unknownKIDBurst + int64(elapsed/time.Second) + 1
	fetches := is.jwksFetches.Load()
	assert.LessOrEqual(t, fetches, limit, "JWKS fetches for %d unknown kids in %v", n, elapsed)
	assert.GreaterOrEqual(t, fetches, int64(2), "an unknown kid refetches")
}

func TestJWTVerifierJWKSUnavailable(t *testing.T) {
	t.Parallel()
	key := vtRSAKey(t, "k")
	is := vtNewIssuer(t, key)
	is.jwksDown.Store(true)
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock, func(c *VerifierConfig) { c.JWKSURI = is.srv.URL + "/jwks" })
	token := vtSign(t, key, is.claims(clock.Now()))

	_, err := v.Verify(t.Context(), token)
	assert.Equal(t, ReasonVerifierError, vtReason(t, err), "no keys: %v", err)

	noKID := jwt.NewWithClaims(key.method, is.claims(clock.Now()))
	s, err := noKID.SignedString(key.priv)
	require.NoError(t, err)
	_, err = v.Verify(t.Context(), s)
	assert.Equal(t, ReasonVerifierError, vtReason(t, err), "no kid, no keys: %v", err)

	is.jwksDown.Store(false)
	_, err = v.Verify(t.Context(), token)
	require.NoError(t, err, "the set comes back: the unknown kid refetches it")
	_, err = v.Verify(t.Context(), s)
	require.NoError(t, err, "a token without kid is tried against every key")
}

// TestJWTVerifierCache: a second verification of a token does no
// signature work; the cached principal is refused once exp passes.
func TestJWTVerifierCache(t *testing.T) {
	t.Parallel()
	key := vtRSAKey(t, "k")
	is := vtNewIssuer(t, key)
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock)
	verifications := countKeyfunc(v)
	token := vtSign(t, key, is.claims(clock.Now(), func(c jwt.MapClaims) {
		c["exp"] = clock.Now().Add(2 * time.Minute).Unix()
	}))

	p1, err := v.Verify(t.Context(), token)
	require.NoError(t, err)
	p2, err := v.Verify(t.Context(), token)
	require.NoError(t, err)
	assert.Same(t, p1, p2, "the cached principal")
	assert.EqualValues(t, 1, verifications.Load(), "the second Verify does no signature work")

	clock.Advance(2*time.Minute + defaultLeeway + time.Second)
	_, err = v.Verify(t.Context(), token)
	assert.Equal(t, ReasonExpired, vtReason(t, err))
	assert.EqualValues(t, 2, verifications.Load(), "an expired entry is not used")

	t.Run("disabled", func(t *testing.T) {
		v := vtNewJWTVerifier(t, is, clock, func(c *VerifierConfig) { c.CacheSize = -1 })
		n := countKeyfunc(v)
		token := vtSign(t, key, is.claims(clock.Now()))
		for range 3 {
			_, err := v.Verify(t.Context(), token)
			require.NoError(t, err)
		}
		assert.EqualValues(t, 3, n.Load())
	})
	t.Run("CacheTTL", func(t *testing.T) {
		v := vtNewJWTVerifier(t, is, clock, func(c *VerifierConfig) { c.CacheTTL = time.Minute })
		n := countKeyfunc(v)
		token := vtSign(t, key, is.claims(clock.Now()))
		_, err := v.Verify(t.Context(), token)
		require.NoError(t, err)
		clock.Advance(time.Minute)
		_, err = v.Verify(t.Context(), token)
		require.NoError(t, err)
		assert.EqualValues(t, 2, n.Load(), "the entry lived CacheTTL")
	})
}

// A token whose exp is in the year 9999 has that Expiry, not one wrapped
// into 1677, and so is cached like any other.
func TestJWTVerifierFarFutureExp(t *testing.T) {
	t.Parallel()
	key := vtRSAKey(t, "k")
	is := vtNewIssuer(t, key)
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock)
	verifications := countKeyfunc(v)
	token := vtSign(t, key, is.claims(clock.Now(), func(c jwt.MapClaims) { c["exp"] = 253402300799 }))
	for range 2 {
		p, err := v.Verify(t.Context(), token)
		require.NoError(t, err)
		assert.Equal(t, 9999, p.Expiry.Year())
	}
	assert.EqualValues(t, 1, verifications.Load(), "cached")
}

func TestVerifierCacheBounded(t *testing.T) {
	t.Parallel()
	c := newVerdictCache(64)
	now := time.Now()
	p := &auth.Principal{Subject: "s"}
	for i := range 10000 {
		k := hashToken(fmt.Sprint(i))
		c.put(&k, p, nil, now, now.Add(time.Minute), 0)
	}
	assert.LessOrEqual(t, c.len(), 64+cacheShards)

	k := hashToken("recent")
	c.put(&k, p, nil, now, now.Add(time.Minute), 7)
	got, _, until, ok := c.get(&k, now, 7)
	assert.True(t, ok)
	assert.Same(t, p, got)
	assert.Equal(t, now.Add(time.Minute), until)
	_, _, _, ok = c.get(&k, now, 8)
	assert.False(t, ok, "another key-set generation")

	c.put(&k, p, nil, now, now.Add(time.Minute), 0)
	_, _, _, ok = c.get(&k, now.Add(time.Minute), 0)
	assert.False(t, ok, "at its deadline")

	c.put(&k, p, nil, now, now, 0)
	_, _, _, ok = c.get(&k, now.Add(-time.Second), 0)
	assert.False(t, ok, "a deadline not after now is not cached")

	var none *verdictCache
	none.put(&k, p, nil, now, now.Add(time.Minute), 0)
	_, _, _, ok = none.get(&k, now, 0)
	assert.False(t, ok)
}

func BenchmarkJWTVerifyCached(b *testing.B) {
	key := vtRSAKey(b, "k")
	is := vtNewIssuer(b, key)
	clock := vtNewClock()
	v := vtNewJWTVerifier(b, is, clock)
	token := vtSign(b, key, is.claims(clock.Now()))
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{
		{"cache", context.Background()},
		{"conn", connstate.With(context.Background(), nil)}, // the connection remembers the token
	} {
		b.Run(bc.name, func(b *testing.B) {
			_, err := v.Verify(bc.ctx, token)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(bc.ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkJWTVerifyUncached(b *testing.B) {
	for _, k := range []vtKey{vtRSAKey(b, "rsa"), vtECKey(b, "ec")} {
		b.Run(k.method.Alg(), func(b *testing.B) {
			is := vtNewIssuer(b, k)
			clock := vtNewClock()
			v := vtNewJWTVerifier(b, is, clock, func(c *VerifierConfig) { c.CacheSize = -1 })
			token := vtSign(b, k, is.claims(clock.Now()))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := v.Verify(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestJWTVerifierJWKSTooLarge: a key set over 1 MiB is not read.
func TestJWTVerifierJWKSTooLarge(t *testing.T) {
	t.Parallel()
	key := vtRSAKey(t, "k")
	is := vtNewIssuer(t, key)
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		set, err := json.Marshal(map[string]any{"keys": []any{key.jwk(t)}, "pad": strings.Repeat("x", maxMetadataBody)})
		if err == nil {
			_, _ = w.Write(set)
		}
	}))
	defer big.Close()
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock, func(c *VerifierConfig) { c.JWKSURI = big.URL })
	_, err := v.Verify(t.Context(), vtSign(t, key, is.claims(clock.Now())))
	assert.Equal(t, ReasonVerifierError, vtReason(t, err), "%v", err)
}

// TestJWTVerifierIssuedAt: an iat that is not a number, or that is later
// than now by more than the leeway, is refused as invalid_token (N11); an
// iat within the leeway is clock skew and is accepted.
func TestJWTVerifierIssuedAt(t *testing.T) {
	t.Parallel()
	rsaKey := vtRSAKey(t, "rsa-1")
	is := vtNewIssuer(t, rsaKey)
	clock := vtNewClock()
	v := vtNewJWTVerifier(t, is, clock)
	now := clock.Now()
	sign := func(iat any) string {
		return vtSign(t, rsaKey, is.claims(now, func(c jwt.MapClaims) { c["iat"] = iat }))
	}
	for name, iat := range map[string]any{
		"a string":             strconv.FormatInt(now.Unix(), 10),
		"an object":            map[string]any{"t": now.Unix()},
		"an hour ahead":        now.Add(time.Hour).Unix(),
		"beyond the leeway":    now.Add(defaultLeeway + 2*time.Second).Unix(),
		"a string in the past": "1970-01-01T00:00:00Z",
	} {
		t.Run(name, func(t *testing.T) {
			p, err := v.Verify(t.Context(), sign(iat))
			assert.Nil(t, p)
			assert.Equal(t, ReasonInvalidToken, vtReason(t, err), "error %v", err)
			assert.Contains(t, err.Error(), "iat")
		})
	}
	for name, iat := range map[string]any{
		"now":               now.Unix(),
		"an hour ago":       now.Add(-time.Hour).Unix(),
		"within the leeway": now.Add(defaultLeeway - 2*time.Second).Unix(),
	} {
		_, err := v.Verify(t.Context(), sign(iat))
		require.NoError(t, err, name)
	}
	_, err := v.Verify(t.Context(), vtSign(t, rsaKey, is.claims(now, func(c jwt.MapClaims) { delete(c, "iat") })))
	assert.NoError(t, err, "iat is optional (RFC 7519 section 4.1.6)")
}
