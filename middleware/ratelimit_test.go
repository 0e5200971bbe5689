package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/mcpconv"
	"github.com/vigil-mcp/vigil/internal/metrics"
	"github.com/vigil-mcp/vigil/middleware"
	"github.com/vigil-mcp/vigil/middleware/auth"
	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/server/mcptest"
	"github.com/vigil-mcp/vigil/telemetry"
	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// slowRate refills so slowly that no test sees a token come back: only
// the burst is admitted.
const slowRate = 0.0001

// quotaRefusals returns the refusals m counted under quota.
func quotaRefusals(t *testing.T, m *metrics.Metrics, quota protocol.Quota) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != mcpconv.MetricQuotaRefusals {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == mcpconv.LabelQuota && l.GetValue() == quota.String() {
					return s.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{quota=%q}", mcpconv.MetricQuotaRefusals, quota)
	return 0
}

// post sends a POST from the client address remote through h.
func post(h http.Handler, remote string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// okHandler answers 200 and counts its requests.
func okHandler(n *int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { *n++; w.WriteHeader(http.StatusOK) })
}

// TestRateLimitHandlerPrincipal admits each client address its burst, then
// answers 429 with Retry-After, RateLimit headers and a quota error,
// counted; another address is served; GET passes.
func TestRateLimitHandlerPrincipal(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	inst, err := middleware.NewInstrumentation(middleware.WithRegisterer(reg), middleware.WithRateLimit(slowRate, 3))
	require.NoError(t, err)
	require.True(t, inst.HasRateLimiter())
	var served int
	h := inst.RateLimitHandler(okHandler(&served))

	for i := range 3 {
		require.Equal(t, http.StatusOK, post(h, "192.0.2.1:1000").Code, "request %d is within the burst", i)
	}
	w := post(h, "192.0.2.1:1001") // another port, same principal
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, 3, served, "the refused request never reached the endpoint")
	assert.NotEmpty(t, w.Header().Get("Retry-After"))
	assert.Equal(t, `"principal";q=3;w=30000`, w.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"principal";r=0;t=`+w.Header().Get("Retry-After"), w.Header().Get("RateLimit"))
	var body struct {
		ID    any `json:"id"`
		Error struct {
			Code int64 `json:"code"`
			Data struct {
				Quota             string `json:"quota"`
				RetryAfterSeconds int64  `json:"retryAfterSeconds"`
			} `json:"data"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
	assert.Equal(t, int64(protocol.CodeServerBusy), body.Error.Code)
	assert.Equal(t, "rate", body.Error.Data.Quota)
	assert.Greater(t, body.Error.Data.RetryAfterSeconds, int64(1000), "a token takes 1/rate seconds")
	assert.Equal(t, w.Header().Get("Retry-After"), json.Number(itoa(body.Error.Data.RetryAfterSeconds)).String())

	assert.Equal(t, http.StatusOK, post(h, "192.0.2.2:1000").Code, "another principal is served")
	g := httptest.NewRequest(http.MethodGet, "/mcp", nil)
	g.RemoteAddr = "192.0.2.1:1000"
	gw := httptest.NewRecorder()
	h.ServeHTTP(gw, g)
	assert.Equal(t, http.StatusOK, gw.Code, "GET takes no token")
	assert.InDelta(t, 1, quotaRefusals(t, middleware.MetricsOf(inst), protocol.QuotaRate), 0)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestRateLimitOff: without limits there is no limiter, and a nil one's
// Handler is its argument.
func TestRateLimitOff(t *testing.T) {
	t.Parallel()
	inst, err := middleware.NewInstrumentation(middleware.WithRateLimit(0, 10), middleware.WithToolRateLimit("echo", -1, 1))
	require.NoError(t, err)
	assert.False(t, inst.HasRateLimiter())
	var served int
	next := okHandler(&served)
	h := inst.RateLimitHandler(next)
	for range 100 {
		require.Equal(t, http.StatusOK, post(h, "192.0.2.1:1").Code)
	}
	assert.Equal(t, 100, served)
}

// newToolServer returns a server with the tools echo and other, and the
// instrumentation opts make.
func newToolServer(t *testing.T, opts ...middleware.InstrumentationOption) (*server.Server, *middleware.Instrumentation) {
	t.Helper()
	inst, err := middleware.NewInstrumentation(append([]middleware.InstrumentationOption{middleware.WithRegisterer(prometheus.NewPedanticRegistry())}, opts...)...)
	require.NoError(t, err)
	srv := server.New(inst.ServerOptions()...)
	for _, name := range []string{"echo", "other"} {
		require.NoError(t, srv.AddTool(server.Tool{Name: name}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
			return server.Text("ok"), nil
		}))
	}
	return srv, inst
}

// TestToolRateLimit admits a tool's burst, then answers -32000 with the
// quota data, counted; other tools and methods pass.
func TestToolRateLimit(t *testing.T) {
	t.Parallel()
	srv, inst := newToolServer(t, middleware.WithToolRateLimit("echo", slowRate, 2))
	c := mcptest.Connect(t, srv)
	for id := range int64(2) {
		c.SendCallTool(id+10, "echo", nil)
		require.Nil(t, c.RecvResponseTo(id+10).Error)
	}
	c.SendCallTool(20, "echo", nil)
	e := c.RecvError(20)
	assert.Equal(t, int64(protocol.CodeServerBusy), e.Code)
	assert.Contains(t, e.Message, `too many calls of tool "echo"`)
	var data struct {
		Quota             string `json:"quota"`
		RetryAfterSeconds int64  `json:"retryAfterSeconds"`
	}
	require.NoError(t, json.Unmarshal(e.Data, &data))
	assert.Equal(t, "tool_rate", data.Quota)
	assert.Greater(t, data.RetryAfterSeconds, int64(1000))

	for id := range int64(5) {
		c.SendCallTool(id+30, "other", nil)
		require.Nil(t, c.RecvResponseTo(id+30).Error, "other has no rate")
	}
	c.Request(40, "ping", nil)
	require.Nil(t, c.RecvResponseTo(40).Error)
	assert.InDelta(t, 1, quotaRefusals(t, middleware.MetricsOf(inst), protocol.QuotaToolRate), 0)
	assert.InDelta(t, 0, quotaRefusals(t, middleware.MetricsOf(inst), protocol.QuotaRate), 0)
}

// addrTransport sends every request with X-Test-Addr, which the test's
// server makes the request's client address.
type addrTransport struct{ addr string }

func (a addrTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Test-Addr", a.addr)
	return http.DefaultTransport.RoundTrip(r)
}

// TestToolRateLimitPerClientAddress: behind Handler, over Streamable HTTP,
// each client address has its own bucket of a tool.
func TestToolRateLimitPerClientAddress(t *testing.T) {
	t.Parallel()
	srv, inst := newToolServer(t, middleware.WithToolRateLimit("echo", slowRate, 1))
	ep := streamable.New(inst.ConnServer(srv, telemetry.TransportStreamableHTTP))
	h := inst.RateLimitHandler(ep)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = r.Header.Get("X-Test-Addr")
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		_ = ep.Close()
		ts.Close()
		_ = srv.Close()
	})
	connect := func(addr string) *mcptest.Client {
		c := mcptest.NewClient(t, streamable.Dial(streamable.ClientConfig{URL: ts.URL, Client: &http.Client{Transport: addrTransport{addr}}}))
		c.Initialize("", nil)
		return c
	}
	a1, a2, b := connect("192.0.2.1:1"), connect("192.0.2.1:2"), connect("192.0.2.2:1")
	a1.SendCallTool(2, "echo", nil)
	require.Nil(t, a1.RecvResponseTo(2).Error)
	a2.SendCallTool(2, "echo", nil)
	assert.Equal(t, "tool_rate", string(quotaOf(t, a2.RecvError(2))), "a second session of the same address shares its bucket")
	b.SendCallTool(2, "echo", nil)
	require.Nil(t, b.RecvResponseTo(2).Error, "another address has its own")
	assert.InDelta(t, 1, quotaRefusals(t, middleware.MetricsOf(inst), protocol.QuotaToolRate), 0)
}

// quotaOf returns the quota of a refusal's data.
func quotaOf(t *testing.T, e *transport.Error) string {
	t.Helper()
	var data struct {
		Quota string `json:"quota"`
	}
	require.NoError(t, json.Unmarshal(e.Data, &data))
	return data.Quota
}

// sharedBuckets is a SharedRateLimiter in memory: one burst per key over
// every replica that uses it, or, once down, an error for every call.
type sharedBuckets struct {
	mu    sync.Mutex
	taken map[string]int
	down  bool
	calls int
}

func (b *sharedBuckets) Allow(_ context.Context, key string, _ float64, burst int) (bool, time.Duration, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if b.down {
		return false, 0, errors.New("shared store away")
	}
	if b.taken[key] >= burst {
		return false, time.Hour, nil
	}
	b.taken[key]++
	return true, 0, nil
}

// TestRateLimitShared runs two replicas' limiters on one shared limiter:
// together they admit one burst of a principal, not one each. With the
// shared limiter failing, each replica limits alone: a new principal gets
// at most one burst per replica, never more, and the shared limiter is
// asked again only a second later.
func TestRateLimitShared(t *testing.T) {
	t.Parallel()
	shared := &sharedBuckets{taken: map[string]int{}}
	const burst = 5
	var handlers []http.Handler
	for range 2 {
		inst, err := middleware.NewInstrumentation(middleware.WithRateLimit(slowRate, burst),
			middleware.WithSharedRateLimits(shared))
		require.NoError(t, err)
		var n int
		handlers = append(handlers, inst.RateLimitHandler(okHandler(&n)))
	}
	admitted := func(remote string, n int) int {
		ok := 0
		for i := range n {
			if post(handlers[i%2], remote).Code == http.StatusOK {
				ok++
			}
		}
		return ok
	}
	assert.Equal(t, burst, admitted("192.0.2.1:1", 4*burst), "two replicas share one bucket")

	shared.mu.Lock()
	shared.down, shared.calls = true, 0
	shared.mu.Unlock()
	got := admitted("192.0.2.9:1", 6*burst)
	assert.Equal(t, 2*burst, got, "shared limiter away: one burst per replica, not unlimited")
	shared.mu.Lock()
	defer shared.mu.Unlock()
	assert.Equal(t, 2, shared.calls, "each replica asked once, then decided alone")
}

// BenchmarkRateLimitHandler is the principal rate's cost on a request under
// its limit, in memory: a bucket lookup and a token taken.
func BenchmarkRateLimitHandler(b *testing.B) {
	inst, err := middleware.NewInstrumentation(middleware.WithRateLimit(1e9, 1e9))
	require.NoError(b, err)
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	h := inst.RateLimitHandler(next)
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	var w httptest.ResponseRecorder
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.ServeHTTP(&w, r)
		}
	})
}

// TestRateLimitHandlerAuthenticated: behind an authorization guard, the
// principal is the authenticated one, not the address: two principals on
// one address have a bucket each.
func TestRateLimitHandlerAuthenticated(t *testing.T) {
	t.Parallel()
	inst, err := middleware.NewInstrumentation(middleware.WithRateLimit(slowRate, 2))
	require.NoError(t, err)
	var served int
	h := inst.RateLimitHandler(okHandler(&served))
	as := func(sub string) http.Handler { // stands in for the guard
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := &auth.Principal{Issuer: "https://as.example.com", Subject: sub}
			h.ServeHTTP(w, r.WithContext(auth.ContextWithPrincipal(r.Context(), p)))
		})
	}
	for _, sub := range []string{"alice", "bob"} {
		for i := range 2 {
			require.Equal(t, http.StatusOK, post(as(sub), "192.0.2.1:1").Code, "%s's request %d", sub, i)
		}
		require.Equal(t, http.StatusTooManyRequests, post(as(sub), "192.0.2.1:1").Code, "%s's third", sub)
	}
	assert.Equal(t, http.StatusOK, post(h, "192.0.2.1:1").Code, "the address alone is a principal of its own")
	assert.Equal(t, 5, served)
}

// TestRateLimitPerUser: the rate is the user's, not the client's: ten
// client ids of one subject share its bucket, while another subject has
// its own; ten IPv6 addresses of one /64 share one unauthenticated
// caller's bucket, and another /64 has its own.
func TestRateLimitPerUser(t *testing.T) {
	t.Parallel()
	inst, err := middleware.NewInstrumentation(middleware.WithRateLimit(slowRate, 5))
	require.NoError(t, err)
	var served int
	h := inst.RateLimitHandler(okHandler(&served))
	as := func(sub, client string) http.Handler { // stands in for the guard
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := &auth.Principal{Issuer: "https://as.example.com", Subject: sub, ClientID: client}
			p.Seal()
			h.ServeHTTP(w, r.WithContext(auth.ContextWithPrincipal(r.Context(), p)))
		})
	}
	ok := 0
	for i := range 10 {
		if post(as("alice", fmt.Sprintf("client-%d", i)), "192.0.2.1:1").Code == http.StatusOK {
			ok++
		}
	}
	assert.Equal(t, 5, ok, "ten clients of one subject share its burst of 5")
	assert.Equal(t, http.StatusOK, post(as("bob", "client-0"), "192.0.2.1:1").Code, "another subject has its own bucket")

	ok = 0
	for i := range 10 {
		if post(h, fmt.Sprintf("[2001:db8:1:2::%x]:1000", i+1)).Code == http.StatusOK {
			ok++
		}
	}
	assert.Equal(t, 5, ok, "ten addresses of one /64 share one caller's burst of 5")
	assert.Equal(t, http.StatusOK, post(h, "[2001:db8:1:3::1]:1000").Code, "another /64 is another caller")
}
