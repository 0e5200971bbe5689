package oauth

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/middleware/auth"
)

// exchangeFixture is an Exchanger on a clock of the test's, whose token
// endpoint answers expires_in 300 and counts its calls; hold, when not
// nil, keeps each answer until it is closed, and arrived receives each
// call's arrival.
type exchangeFixture struct {
	x       *Exchanger
	now     time.Time
	calls   atomic.Int64
	hold    chan struct{}
	arrived chan struct{}
}

func newExchangeFixture(t *testing.T, hold bool) *exchangeFixture {
	t.Helper()
	f := &exchangeFixture{now: time.Now(), arrived: make(chan struct{}, 100)}
	if hold {
		f.hold = make(chan struct{})
	}
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := f.calls.Add(1)
		f.arrived <- struct{}{}
		if f.hold != nil {
			<-f.hold
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"t`+string(rune('0'+n))+`","token_type":"Bearer","expires_in":300}`)
	}))
	t.Cleanup(as.Close)
	rs := newAssertingServer(t, "https://mcp.example.com/mcp")
	x, err := rs.Exchanger(ExchangeConfig{Endpoint: as.URL, ClientID: "c", ClientSecret: "s"})
	require.NoError(t, err)
	x.now = func() time.Time { return f.now }
	f.x = x
	return f
}

// ctxOf returns the context of a request rs verified with token for p.
func (f *exchangeFixture) ctxOf(p *auth.Principal, token string) context.Context {
	ctx := auth.ContextWithPrincipal(context.Background(), p)
	return context.WithValue(ctx, heldTokenKey{}, &heldToken{rs: f.x.rs, p: p, token: token})
}

// An exchanged token is not handed out past the caller's own token's
// expiry, nor in the last 30 s of its own life.
func TestExchangeCachedUntilTheFirstExpiry(t *testing.T) {
	t.Parallel()
	f := newExchangeFixture(t, false)
	short := &auth.Principal{Issuer: "https://as", Subject: "alice", Expiry: f.now.Add(10 * time.Second)}
	ctx := f.ctxOf(short, "alice-token")
	tok, err := f.x.Exchange(ctx, "https://api")
	require.NoError(t, err)
	assert.Equal(t, "t1", tok)
	f.now = f.now.Add(9 * time.Second)
	tok, _ = f.x.Exchange(ctx, "https://api")
	assert.Equal(t, "t1", tok, "cached while the caller's token lives")
	f.now = f.now.Add(2 * time.Second)
	tok, _ = f.x.Exchange(ctx, "https://api")
	assert.Equal(t, "t2", tok, "exchanged again once the caller's token expired")

	long := &auth.Principal{Issuer: "https://as", Subject: "bob", Expiry: f.now.Add(time.Hour)}
	ctx = f.ctxOf(long, "bob-token")
	tok, _ = f.x.Exchange(ctx, "https://api")
	assert.Equal(t, "t3", tok)
	f.now = f.now.Add(300*time.Second - exchangeMargin - time.Second)
	tok, _ = f.x.Exchange(ctx, "https://api")
	assert.Equal(t, "t3", tok)
	f.now = f.now.Add(time.Second)
	tok, _ = f.x.Exchange(ctx, "https://api")
	assert.Equal(t, "t4", tok, "not in its last 30 s")
	assert.Equal(t, int64(4), f.calls.Load())
}

// Concurrent Exchanges of one key make one call to the token endpoint:
// every caller but the first waits for it (or, arriving after it ended,
// finds its token in the cache).
func TestExchangeConcurrentCallsShareOne(t *testing.T) {
	t.Parallel()
	f := newExchangeFixture(t, true)
	p := &auth.Principal{Issuer: "https://as", Subject: "alice", Expiry: f.now.Add(time.Hour)}
	ctx := f.ctxOf(p, "alice-token")
	const n = 8
	var wg sync.WaitGroup
	toks := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { toks[i], errs[i] = f.x.Exchange(ctx, "https://api", "read") })
	}
	<-f.arrived // the first call is at the endpoint, held there
	close(f.hold)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		assert.Equal(t, "t1", toks[i])
	}
	assert.Equal(t, int64(1), f.calls.Load())
}

// Two subject tokens of one principal that differ in a claim (the
// authorization server may decide on it: a tenant, acr, consent) each
// cause their own exchange: a token exchanged for one is never handed out
// for the other. The same token again is answered from the cache.
func TestExchangePerSubjectToken(t *testing.T) {
	t.Parallel()
	f := newExchangeFixture(t, false)
	acme := &auth.Principal{Issuer: "https://as", Subject: "alice", ClientID: "app", Expiry: f.now.Add(time.Hour), Claims: map[string]any{"org": "acme"}}
	globex := &auth.Principal{Issuer: "https://as", Subject: "alice", ClientID: "app", Expiry: f.now.Add(time.Hour), Claims: map[string]any{"org": "globex"}}
	require.Equal(t, acme.Key(), globex.Key(), "one principal")
	tok, err := f.x.Exchange(f.ctxOf(acme, "alice-acme-token"), "https://api")
	require.NoError(t, err)
	assert.Equal(t, "t1", tok)
	tok, err = f.x.Exchange(f.ctxOf(globex, "alice-globex-token"), "https://api")
	require.NoError(t, err)
	assert.Equal(t, "t2", tok, "globex's token exchanged for itself, not handed acme's")
	tok, _ = f.x.Exchange(f.ctxOf(acme, "alice-acme-token"), "https://api")
	assert.Equal(t, "t1", tok, "the same subject token reuses its own")
	assert.Equal(t, int64(2), f.calls.Load())
}
