package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

const (
	vtClientID = "resource-server"
	vtSecret   = "s3cr3t-do-not-log"
)

// vtIntrospector is an RFC 7662 endpoint answering from a table of tokens.
type vtIntrospector struct {
	srv     *httptest.Server
	calls   atomic.Int64
	mu      sync.Mutex
	answers map[string]map[string]any // by token; absent = inactive
	status  atomic.Int64              // when not 0, answer this status
	hold    chan struct{}             // when not nil, answers wait for it
	issuer  string
}

func vtNewIntrospector(t *testing.T) *vtIntrospector {
	t.Helper()
	in := &vtIntrospector{answers: map[string]map[string]any{}}
	in.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in.calls.Add(1)
		if in.hold != nil {
			<-in.hold
		}
		if s := in.status.Load(); s != 0 {
			http.Error(w, "broken", int(s))
			return
		}
		id, secret, ok := r.BasicAuth()
		if r.Method != http.MethodPost || !ok || id != vtClientID || secret != vtSecret ||
			r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		if err := r.ParseForm(); err != nil || r.PostForm.Get("token_type_hint") != "access_token" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		in.mu.Lock()
		a, ok := in.answers[r.PostForm.Get("token")]
		in.mu.Unlock()
		if !ok {
			a = map[string]any{"active": false}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(a)
	}))
	in.issuer = "https://as.example.com"
	t.Cleanup(in.srv.Close)
	return in
}

func (in *vtIntrospector) set(token string, a map[string]any) {
	in.mu.Lock()
	in.answers[token] = a
	in.mu.Unlock()
}

// active returns an active answer at now, changed by mutate.
func (in *vtIntrospector) active(now time.Time, mutate ...func(map[string]any)) map[string]any {
	a := map[string]any{
		"active":    true,
		"sub":       "alice",
		"iss":       in.issuer,
		"aud":       vtResource,
		"client_id": "client-1",
		"scope":     "files:read files:write",
		"exp":       now.Add(time.Hour).Unix(),
		"tenant":    "acme",
	}
	for _, m := range mutate {
		m(a)
	}
	return a
}

func vtNewIntrospectionVerifier(t *testing.T, in *vtIntrospector, clock *vtClock, mutate ...func(*VerifierConfig)) *introspectionVerifier {
	t.Helper()
	cfg := VerifierConfig{
		IntrospectionEndpoint: in.srv.URL,
		ClientID:              vtClientID,
		ClientSecret:          vtSecret,
		Issuer:                in.issuer,
		Audiences:             []string{vtResource},
		Claims:                []string{"tenant"},
		now:                   clock.Now,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	v, err := NewVerifier(t.Context(), cfg)
	require.NoError(t, err)
	require.NotNil(t, v.in, "an introspection verifier")
	return v.in
}

func TestIntrospectionVerifier(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	clock := vtNewClock()
	now := clock.Now()
	v := vtNewIntrospectionVerifier(t, in, clock)

	in.set("good", in.active(now))
	p, err := v.Verify(t.Context(), "good")
	require.NoError(t, err)
	want := &auth.Principal{
		Subject: "alice", Issuer: in.issuer, ClientID: "client-1",
		Scopes: []string{"files:read", "files:write"}, Expiry: now.Add(time.Hour).UTC(),
		Claims: map[string]any{"tenant": "acme"},
	}
	want.Seal() // sealed: sessions compare the key per request
	assert.Equal(t, want, p)
	assert.Equal(t, strconv.Itoa(len(in.issuer))+":"+in.issuer+" 5:alice client-1", p.Key())

	in.set("aud-array", in.active(now, func(a map[string]any) { a["aud"] = []string{"https://x.example", vtResource} }))
	in.set("no-iss", in.active(now, func(a map[string]any) { delete(a, "iss") }))
	in.set("expired", in.active(now, func(a map[string]any) { a["exp"] = now.Add(-time.Hour).Unix() }))
	in.set("not-yet", in.active(now, func(a map[string]any) { a["nbf"] = now.Add(time.Hour).Unix() }))
	in.set("wrong-aud", in.active(now, func(a map[string]any) { a["aud"] = "https://other.example.com/mcp" }))
	in.set("no-aud", in.active(now, func(a map[string]any) { delete(a, "aud") }))
	in.set("wrong-iss", in.active(now, func(a map[string]any) { a["iss"] = "https://evil.example.com" }))
	in.set("no-sub", in.active(now, func(a map[string]any) { delete(a, "sub") }))
	in.set("no-sub-no-client", in.active(now, func(a map[string]any) { delete(a, "sub"); delete(a, "client_id") }))
	in.set("inactive-but-claims", in.active(now, func(a map[string]any) { a["active"] = false }))

	for _, token := range []string{"aud-array", "no-iss"} {
		p, err := v.Verify(t.Context(), token)
		require.NoError(t, err, token)
		assert.Equal(t, in.issuer, p.Issuer, token)
	}
	// A client-credentials answer without sub speaks for its client.
	noSub, err := v.Verify(t.Context(), "no-sub")
	require.NoError(t, err)
	assert.Equal(t, noSub.ClientID, noSub.Subject)
	assert.NotEmpty(t, noSub.Subject)
	tests := []struct {
		token string
		want  Reason
	}{
		{"", ReasonInvalidToken},
		{string(make([]byte, maxTokenBytes+1)), ReasonInvalidToken},
		{"unknown", ReasonInvalidToken},
		{"inactive-but-claims", ReasonInvalidToken},
		{"expired", ReasonExpired},
		{"not-yet", ReasonExpired},
		{"wrong-aud", ReasonWrongAudience},
		{"no-aud", ReasonWrongAudience},
		{"wrong-iss", ReasonWrongIssuer},
		{"no-sub-no-client", ReasonInvalidToken},
		{`malformed"token`, ReasonInvalidToken}, // never sent: not a b64token
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.20q", tt.token), func(t *testing.T) {
			p, err := v.Verify(t.Context(), tt.token)
			assert.Nil(t, p)
			assert.Equal(t, tt.want, vtReason(t, err), "error %v", err)
		})
	}
	assert.EqualValues(t, 3+8+1, in.calls.Load(), "the empty, oversized and malformed tokens are not sent")
}

// TestIntrospectionSingleflight: 1,000 concurrent verifications of one new
// token make one call to the endpoint.
func TestIntrospectionSingleflight(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	in.hold = make(chan struct{})
	clock := vtNewClock()
	v := vtNewIntrospectionVerifier(t, in, clock)
	in.set("burst", in.active(clock.Now()))

	const n = 1000
	var started, done sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		started.Add(1)
		done.Go(func() {
			started.Done()
			_, err := v.Verify(context.Background(), "burst")
			errs <- err
		})
	}
	started.Wait() // every caller is in, or about to be
	close(in.hold)
	done.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.EqualValues(t, 1, in.calls.Load())
}

func TestIntrospectionCache(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	clock := vtNewClock()
	v := vtNewIntrospectionVerifier(t, in, clock)
	in.set("short", in.active(clock.Now(), func(a map[string]any) { a["exp"] = clock.Now().Add(2 * time.Minute).Unix() }))
	in.set("long", in.active(clock.Now()))

	verify := func(token string) error {
		_, err := v.Verify(t.Context(), token)
		return err
	}
	require.NoError(t, verify("short"))
	require.NoError(t, verify("short"))
	assert.EqualValues(t, 1, in.calls.Load(), "a positive answer is cached")

	require.NoError(t, verify("long"))
	clock.Advance(DefaultCacheTTL - time.Second)
	require.NoError(t, verify("long"))
	assert.EqualValues(t, 2, in.calls.Load(), "cached for CacheTTL")
	clock.Advance(time.Second)
	require.NoError(t, verify("long"))
	assert.EqualValues(t, 3, in.calls.Load(), "asked again after CacheTTL")

	// short's exp passed: the entry is not used, and the endpoint's
	// still-active answer is refused as expired.
	assert.Equal(t, ReasonExpired, reasonOf(verify("short")))
	assert.EqualValues(t, 4, in.calls.Load())

	t.Run("negative", func(t *testing.T) {
		calls := in.calls.Load()
		assert.Equal(t, ReasonInvalidToken, reasonOf(verify("revoked")))
		assert.Equal(t, ReasonInvalidToken, reasonOf(verify("revoked")))
		assert.Equal(t, calls+1, in.calls.Load(), "a refusal is cached")
		in.set("revoked", in.active(clock.Now())) // say it became active
		clock.Advance(defaultNegativeCacheTTL - time.Second)
		assert.Equal(t, ReasonInvalidToken, reasonOf(verify("revoked")))
		clock.Advance(time.Second)
		require.NoError(t, verify("revoked"), "asked again after the negative TTL")
		assert.Equal(t, calls+2, in.calls.Load())
	})
}

// Refused tokens are remembered in their own, smaller cache: a flood of
// made-up tokens never evicts an active token, and stays bounded.
func TestIntrospectionRefusalsKeepActiveTokens(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	clock := vtNewClock()
	const size = 160
	v := vtNewIntrospectionVerifier(t, in, clock, func(c *VerifierConfig) {
		c.CacheSize = size
		c.MissRate = -1 // every junk token is introspected, at once
	})
	in.set("good", in.active(clock.Now()))
	_, err := v.Verify(t.Context(), "good")
	require.NoError(t, err)
	for i := range 10 * size {
		_, err := v.Verify(t.Context(), fmt.Sprintf("junk%d", i))
		require.Equal(t, ReasonInvalidToken, reasonOf(err))
	}
	calls := in.calls.Load()
	_, err = v.Verify(t.Context(), "good")
	require.NoError(t, err)
	assert.Equal(t, calls, in.calls.Load(), "the active token is still cached")
	assert.Equal(t, 1, v.cache.len(), "refusals are not in the cache of active tokens")
	assert.LessOrEqual(t, v.refused.len(), size, "the refusals' cache is bounded")
	assert.Positive(t, v.refused.len())
}

// A NumericDate beyond the year 2262 (where time.Duration ends) is not
// wrapped into the past: unixFloat clamps to the years 1 to 9999.
func TestUnixFloat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   float64
		want time.Time
	}{
		{0, time.Unix(0, 0)},
		{1700000000.25, time.Unix(1700000000, 250000000)},
		{-1.5, time.Unix(-2, 500000000)},
		{10000000000, time.Date(2286, 11, 20, 17, 46, 40, 0, time.UTC)}, // past 2262
		{253402300799, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
		{1e18, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
		{-1e18, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		got := unixFloat(tt.in)
		assert.True(t, tt.want.Equal(got), "%v: got %v, want %v", tt.in, got, tt.want)
		assert.Equal(t, time.UTC, got.Location())
	}
}

// An active token whose exp is in the year 9999 (a common "never
// expires") is accepted, and cached for CacheTTL.
func TestIntrospectionFarFutureExp(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	clock := vtNewClock()
	v := vtNewIntrospectionVerifier(t, in, clock)
	in.set("forever", in.active(clock.Now(), func(a map[string]any) { a["exp"] = 253402300799 }))
	for range 2 {
		p, err := v.Verify(t.Context(), "forever")
		require.NoError(t, err)
		assert.Equal(t, 9999, p.Expiry.Year())
	}
	assert.EqualValues(t, 1, in.calls.Load(), "cached")
}

func TestIntrospectionEndpointDown(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	clock := vtNewClock()
	var logs bytes.Buffer
	var logMu sync.Mutex
	v := vtNewIntrospectionVerifier(t, in, clock, func(c *VerifierConfig) {
		c.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))
	})
	in.set("tok", in.active(clock.Now()))

	in.status.Store(http.StatusInternalServerError)
	_, err := v.Verify(t.Context(), "tok")
	assert.Equal(t, ReasonVerifierError, vtReason(t, err))
	assert.NotContains(t, fmt.Sprintf("%v %+v", err, err), vtSecret)
	in.status.Store(0)
	_, err = v.Verify(t.Context(), "tok")
	require.NoError(t, err, "a failure is not cached")
	assert.EqualValues(t, 2, in.calls.Load())

	t.Run("bad JSON", func(t *testing.T) {
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"active": tru`))
		}))
		defer bad.Close()
		v := vtNewIntrospectionVerifier(t, in, clock, func(c *VerifierConfig) { c.IntrospectionEndpoint = bad.URL })
		_, err := v.Verify(t.Context(), "tok")
		assert.Equal(t, ReasonVerifierError, vtReason(t, err))
	})
	t.Run("400 unsupported_token_type", func(t *testing.T) {
		// oidc-provider's answer for a JWT: the token is refused, and
		// remembered, not a verifier error (503).
		var calls atomic.Int64
		refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			calls.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"unsupported_token_type","error_description":"Structured JWT Tokens cannot be introspected"}`))
		}))
		defer refusing.Close()
		v := vtNewIntrospectionVerifier(t, in, clock, func(c *VerifierConfig) { c.IntrospectionEndpoint = refusing.URL })
		for range 2 {
			_, err := v.Verify(t.Context(), "a.jwt.token")
			assert.Equal(t, ReasonInvalidToken, vtReason(t, err))
		}
		assert.EqualValues(t, 1, calls.Load(), "the refusal is cached")
	})
	t.Run("400 other", func(t *testing.T) {
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_request"}`))
		}))
		defer other.Close()
		v := vtNewIntrospectionVerifier(t, in, clock, func(c *VerifierConfig) { c.IntrospectionEndpoint = other.URL })
		_, err := v.Verify(t.Context(), "tok")
		assert.Equal(t, ReasonVerifierError, vtReason(t, err))
	})
	t.Run("wrong credentials", func(t *testing.T) {
		v := vtNewIntrospectionVerifier(t, in, clock, func(c *VerifierConfig) { c.ClientSecret = "wrong-" + vtSecret })
		_, err := v.Verify(t.Context(), "tok")
		assert.Equal(t, ReasonVerifierError, vtReason(t, err))
		assert.NotContains(t, fmt.Sprintf("%v %+v", err, err), vtSecret)
	})
	t.Run("unreachable", func(t *testing.T) {
		gone := httptest.NewServer(http.NotFoundHandler())
		gone.Close()
		v := vtNewIntrospectionVerifier(t, in, clock, func(c *VerifierConfig) { c.IntrospectionEndpoint = gone.URL })
		_, err := v.Verify(t.Context(), "tok")
		assert.Equal(t, ReasonVerifierError, vtReason(t, err))
		assert.NotContains(t, fmt.Sprintf("%v %+v", err, err), vtSecret)
	})
	logMu.Lock()
	defer logMu.Unlock()
	assert.Contains(t, logs.String(), "introspection failed")
	assert.NotContains(t, logs.String(), vtSecret)
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestIntrospectionDiscoveredEndpoint(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	clock := vtNewClock()
	var metaCalls atomic.Int64
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-authorization-server" {
			http.NotFound(w, r)
			return
		}
		metaCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": "http://" + r.Host, "introspection_endpoint": in.srv.URL})
	}))
	defer as.Close()
	in.issuer = as.URL
	v := vtNewIntrospectionVerifier(t, in, clock, func(c *VerifierConfig) { c.IntrospectionEndpoint = "" })
	in.set("a", in.active(clock.Now()))
	in.set("b", in.active(clock.Now()))
	for _, tok := range []string{"a", "b"} {
		_, err := v.Verify(t.Context(), tok)
		require.NoError(t, err)
	}
	assert.EqualValues(t, 1, metaCalls.Load(), "discovered once")
}

func TestNewVerifierIntrospectionConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  VerifierConfig
	}{
		{"no endpoint nor issuer", VerifierConfig{ClientID: vtClientID, Audiences: []string{vtResource}}},
		{"bad endpoint", VerifierConfig{IntrospectionEndpoint: "ftp://x", Audiences: []string{vtResource}}},
		{"no audience", VerifierConfig{IntrospectionEndpoint: "https://as.example.com/introspect"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := NewVerifier(t.Context(), tt.cfg)
			require.Error(t, err)
			assert.Nil(t, v)
		})
	}
}

// TestIntrospectionIssuedAt: an answer whose iat is not a number, or later
// than now by more than the leeway, is refused as invalid_token (N11).
func TestIntrospectionIssuedAt(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	clock := vtNewClock()
	now := clock.Now()
	v := vtNewIntrospectionVerifier(t, in, clock)
	iat := func(val any) map[string]any {
		return in.active(now, func(a map[string]any) { a["iat"] = val })
	}
	in.set("string", iat(strconv.FormatInt(now.Unix(), 10)))
	in.set("future", iat(now.Add(time.Hour).Unix()))
	in.set("beyond-leeway", iat(now.Add(defaultLeeway+2*time.Second).Unix()))
	in.set("within-leeway", iat(now.Add(defaultLeeway-2*time.Second).Unix()))
	in.set("past", iat(now.Add(-time.Hour).Unix()))
	in.set("null", iat(nil))
	for _, token := range []string{"string", "future", "beyond-leeway"} {
		p, err := v.Verify(t.Context(), token)
		assert.Nil(t, p, token)
		assert.Equal(t, ReasonInvalidToken, vtReason(t, err), "%s: error %v", token, err)
		assert.Contains(t, err.Error(), "iat", token)
	}
	for _, token := range []string{"within-leeway", "past", "null"} {
		_, err := v.Verify(t.Context(), token)
		assert.NoError(t, err, token)
	}
}
