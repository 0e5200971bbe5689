package oauth

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/connstate"
)

// floodAS is an introspection endpoint in memory (an http.RoundTripper,
// usable in a synctest bubble): the token valid is active, any other is
// inactive, and its answers wait until release is closed.
type floodAS struct {
	calls   atomic.Int64
	release chan struct{}
}

const floodValid = "valid-token"

func (as *floodAS) RoundTrip(r *http.Request) (*http.Response, error) {
	as.calls.Add(1)
	b, _ := io.ReadAll(r.Body)
	_ = r.Body.Close()
	answer := `{"active":false}`
	if strings.Contains(string(b), "token="+floodValid+"&") {
		answer = fmt.Sprintf(`{"active":true,"sub":"alice","aud":%q,"exp":%d}`, vtResource, time.Now().Add(time.Hour).Unix())
	} else {
		<-as.release
	}
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(answer)), Request: r,
	}, nil
}

func newFloodVerifier(t *testing.T, as *floodAS, mutate ...func(*VerifierConfig)) *introspectionVerifier {
	t.Helper()
	cfg := VerifierConfig{
		IntrospectionEndpoint: "https://as.example.com/introspect",
		Audiences:             []string{vtResource},
		HTTPClient:            &http.Client{Transport: as},
	}
	for _, m := range mutate {
		m(&cfg)
	}
	v, err := NewVerifier(t.Context(), cfg)
	require.NoError(t, err)
	return v.in
}

// addrConn is a connection from addr, for ConnContext.
type addrConn struct {
	net.Conn
	addr net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.addr }

func connFrom(t *testing.T, addr string) addrConn {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", addr)
	require.NoError(t, err)
	return addrConn{addr: a}
}

// flood verifies n fresh tokens at once, the i-th from the address
// addr(i), and returns their errors once every one of them is refused or
// waiting (for the endpoint's answer, the bucket or a free call), and a
// wait for the rest.
func flood(t *testing.T, v *introspectionVerifier, n int, addr func(i int) string) ([]error, func()) {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		ctx := connstate.With(t.Context(), connFrom(t, addr(i)))
		wg.Go(func() {
			<-start
			_, errs[i] = v.Verify(ctx, fmt.Sprintf("junk-%d", i))
		})
	}
	close(start)
	synctest.Wait()
	return errs, wg.Wait
}

func countReasons(errs []error) map[string]int {
	m := map[string]int{}
	for _, err := range errs {
		m[reasonOf(err).String()]++
	}
	return m
}

// A flood of 500 fresh tokens from one address: that address holds at
// most half of the concurrent calls, the rest is refused without a call,
// and a valid token from another address, presented while the flood's
// calls are in progress, is served at once.
func TestIntrospectionFloodOneAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := &floodAS{release: make(chan struct{})}
		v := newFloodVerifier(t, as)
		errs, wait := flood(t, v, 500, func(int) string { return "203.0.113.7:40000" })
		require.Equal(t, int64(defaultMissSlots/2), as.calls.Load(), "the flooding address holds half of the calls")

		user := connstate.With(t.Context(), connFrom(t, "198.51.100.9:50000"))
		p, err := v.Verify(user, floodValid)
		require.NoError(t, err, "a valid token during the flood")
		assert.Equal(t, "alice", p.Subject)

		close(as.release)
		wait()
		assert.LessOrEqual(t, as.calls.Load(), int64(100))
		got := countReasons(errs)
		assert.Equal(t, map[string]int{"verifier_busy": 500 - defaultMissSlots/2, "invalid_token": defaultMissSlots / 2}, got)
	})
}

// A flood of 500 fresh tokens, each from an address of its own: the
// bucket lets its burst and one second of its rate through, the rest is
// refused without a call. A valid token presented when the budget is
// spent is refused 503 (busy, not invalid) and served when retried after
// Retry-After, while the flood's calls are still pending.
func TestIntrospectionFloodManyAddresses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := &floodAS{release: make(chan struct{})}
		v := newFloodVerifier(t, as)
		errs, wait := flood(t, v, 500, func(i int) string { return fmt.Sprintf("10.%d.%d.1:40000", i/250, i%250) })
		require.Equal(t, int64(defaultMissSlots), as.calls.Load(), "every call slot is taken")

		user := connstate.With(t.Context(), connFrom(t, "198.51.100.9:50000"))
		_, err := v.Verify(user, floodValid)
		require.Equal(t, ReasonVerifierBusy, reasonOf(err), "the budget is spent: %v", err)

		close(as.release)       // the authorization server answers the flood
		time.Sleep(time.Second) // the client waits out Retry-After (fake time)
		p, err := v.Verify(user, floodValid)
		require.NoError(t, err, "the valid token, retried")
		assert.Equal(t, "alice", p.Subject)
		wait()

		burst := int64(defaultMissRate * defaultMissBurstTime.Seconds())
		calls := as.calls.Load() - 1 // the valid token's
		assert.LessOrEqual(t, calls, burst+defaultMissRate*int64(defaultMissWait/time.Second)+1)
		assert.GreaterOrEqual(t, calls, burst, "the burst is let through")
		got := countReasons(errs)
		assert.Equal(t, 500, got["verifier_busy"]+got["invalid_token"])
		assert.Equal(t, calls, int64(got["invalid_token"]), "each call answered one flooding token")
		assert.Zero(t, v.refused.len()-got["invalid_token"], "only answered tokens are remembered")
	})
}

// Concurrent requests of one new token from one address are one call:
// the address's cap counts calls, not requests.
func TestIntrospectionFloodOneTokenIsOneCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		as := &floodAS{release: make(chan struct{})}
		v := newFloodVerifier(t, as)
		ctx := connstate.With(t.Context(), connFrom(t, "198.51.100.9:50000"))
		start := make(chan struct{})
		var wg sync.WaitGroup
		var served atomic.Int64
		for range 200 {
			wg.Go(func() {
				<-start
				if _, err := v.Verify(ctx, floodValid); err == nil {
					served.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		assert.Equal(t, int64(200), served.Load())
		assert.Equal(t, int64(1), as.calls.Load())
	})
}

// A token refused as busy is answered 503 with Retry-After 1, no
// challenge, and counted as verifier_busy; it is not remembered.
func TestHandlerVerifierBusy(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	clock := vtNewClock()
	v := vtNewIntrospectionVerifier(t, in, clock, func(c *VerifierConfig) {
		c.MissRate, c.MissBurst, c.MissWait = 1e-6, 1, -1 // one call, then none
	})
	in.set("good", in.active(clock.Now()))
	reg := prometheus.NewRegistry()
	rs, err := New(Config{Resource: vtResource, AuthorizationServers: []string{in.issuer}, Verifier: v, Registerer: reg})
	require.NoError(t, err)
	h := rs.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	do := func(token string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, vtResource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(w, r)
		return w
	}
	require.Equal(t, http.StatusUnauthorized, do("junk").Code, "the one call")
	w := do("good")
	require.Equal(t, http.StatusServiceUnavailable, w.Code, "%s", w.Body)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	assert.Empty(t, w.Header().Get("WWW-Authenticate"))
	assert.Contains(t, w.Body.String(), "too many new tokens")
	assert.InDelta(t, 1, testutil.ToFloat64(rs.failures.WithLabelValues("verifier_busy")), 0)
	assert.Equal(t, int64(1), in.calls.Load(), "no call once the budget is spent")
	_, err = v.Verify(t.Context(), "good")
	assert.Equal(t, ReasonVerifierBusy, reasonOf(err), "a busy refusal is not remembered as a verdict")
	assert.Equal(t, http.StatusUnauthorized, do("junk").Code, "a refused token is remembered, and costs no budget")
}

// CacheTTL < 0 caches no active token: each request is introspected, and
// a revoked token stops working at once. Refused tokens are still
// remembered.
func TestIntrospectionNoPositiveCache(t *testing.T) {
	t.Parallel()
	in := vtNewIntrospector(t)
	clock := vtNewClock()
	v := vtNewIntrospectionVerifier(t, in, clock, func(c *VerifierConfig) { c.CacheTTL = -1 })
	in.set("good", in.active(clock.Now()))
	ctx := connstate.With(t.Context(), connFrom(t, "192.0.2.1:1"))
	for range 3 {
		_, err := v.Verify(ctx, "good")
		require.NoError(t, err)
	}
	assert.Equal(t, int64(3), in.calls.Load(), "every request is introspected")
	in.set("good", map[string]any{"active": false})
	_, err := v.Verify(ctx, "good")
	assert.Equal(t, ReasonInvalidToken, reasonOf(err), "revoked: refused at once")
	_, err = v.Verify(ctx, "good")
	assert.Equal(t, ReasonInvalidToken, reasonOf(err))
	assert.Equal(t, int64(4), in.calls.Load(), "the refusal is remembered")
}

func TestSourceOf(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"192.0.2.1:80":                    "192.0.2.1",
		"[::ffff:192.0.2.1]:80":           "192.0.2.1",
		"[2001:db8:1:2:3:4:5:6]:443":      "2001:db8:1:2::",
		"[2001:db8:1:2:ffff::1%eth0]:443": "2001:db8:1:2::",
	} {
		assert.Equal(t, want, sourceOf(addrConn{addr: fakeAddr(addr)}), addr)
	}
	assert.Empty(t, sourceOf(nil))
	assert.Empty(t, sourceOf(addrConn{addr: fakeAddr("@unix")}))
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }
