package streamable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/protocol"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// quotaPost serves one POST of the caller at ip on h in process.
func quotaPost(h http.Handler, ip, sid, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	r.RemoteAddr = ip + ":40000"
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// quotaRefusal checks that w is a 429 refusal by quota q with Retry-After
// retry and the quota in the error's data.
func quotaRefusal(t *testing.T, w *httptest.ResponseRecorder, q protocol.Quota, retry string) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, w.Code, w.Body.String())
	assert.Equal(t, retry, w.Header().Get("Retry-After"))
	var resp struct {
		Error struct {
			Code int64
			Data struct {
				Quota             string
				RetryAfterSeconds int
			}
		}
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
	assert.Equal(t, int64(protocol.CodeServerBusy), resp.Error.Code)
	assert.Equal(t, q.String(), resp.Error.Data.Quota)
	assert.Equal(t, retry, itoa(resp.Error.Data.RetryAfterSeconds))
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// tally counts what an Endpoint's hooks report (quota refusals, reject
// reasons), safely from any goroutine.
type tally[K comparable] struct {
	mu sync.Mutex
	n  map[K]int
}

func (c *tally[K]) add(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = make(map[K]int)
	}
	c.n[k]++
}

func (c *tally[K]) get(k K) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func quotaInit(t *testing.T, h http.Handler, ip string) *httptest.ResponseRecorder {
	t.Helper()
	return quotaPost(h, ip, "", idleInit)
}

// One caller's sessions are limited; another caller's are not affected,
// and a session the first deletes gives its place back.
func TestQuotaSessionsPerCaller(t *testing.T) {
	srv := htServer(t)
	var got tally[protocol.Quota]
	h := streamable.New(srv, streamable.WithQuotas(streamable.Quotas{Sessions: 3, OnRefuse: got.add}))
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })

	var sids []string
	for range 3 {
		w := quotaInit(t, h, "192.0.2.1")
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		sids = append(sids, w.Header().Get("Mcp-Session-Id"))
	}
	quotaRefusal(t, quotaInit(t, h, "192.0.2.1"), protocol.QuotaSessions, "10")
	assert.Equal(t, 1, got.get(protocol.QuotaSessions))

	w := quotaInit(t, h, "192.0.2.2")
	require.Equal(t, http.StatusOK, w.Code, "another caller is not limited by the first: %s", w.Body)

	del := httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil)
	del.RemoteAddr = "192.0.2.1:1"
	del.Header.Set("Mcp-Session-Id", sids[0])
	dw := httptest.NewRecorder()
	h.ServeHTTP(dw, del)
	require.Equal(t, http.StatusNoContent, dw.Code)
	w = quotaInit(t, h, "192.0.2.1")
	require.Equal(t, http.StatusOK, w.Code, "a deleted session gives its place back: %s", w.Body)
	quotaRefusal(t, quotaInit(t, h, "192.0.2.1"), protocol.QuotaSessions, "10")
	assert.Equal(t, 2, got.get(protocol.QuotaSessions))
}

// With EvictIdle, a caller at its limit opens a new session by ending its
// session idle the longest; a session with a request in flight is never
// evicted, and when all are busy the initialize is refused.
func TestQuotaSessionsEvictIdle(t *testing.T) {
	srv := htServer(t)
	started, release := make(chan struct{}, 1), make(chan struct{})
	require.NoError(t, srv.AddTool(server.Tool{Name: "hold"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-release:
			return server.Text("held"), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}))
	var got tally[protocol.Quota]
	h := streamable.New(srv, streamable.WithQuotas(streamable.Quotas{Sessions: 2, EvictIdle: true, OnRefuse: got.add}))
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })

	s1, s2 := openIdle(t, h), openIdle(t, h) // from 192.0.2.1 (httptest's default address)
	pingIdle(t, h, s1)                       // s2 is now idle the longest
	s3 := openIdle(t, h)
	assert.Equal(t, 1, got.get(protocol.QuotaSessions))
	w := idlePost(h, s2, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	assert.Equal(t, http.StatusNotFound, w.Code, "the idlest session was evicted")
	pingIdle(t, h, s1)
	pingIdle(t, h, s3)

	// Both sessions busy: nothing to evict.
	var wg sync.WaitGroup
	for _, sid := range []string{s1, s3} {
		wg.Go(func() {
			w := idlePost(h, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold","arguments":{}}}`)
			assert.Equal(t, http.StatusOK, w.Code)
		})
		<-started
	}
	quotaRefusal(t, idlePost(h, "", idleInit), protocol.QuotaSessions, "10")
	close(release)
	wg.Wait()
}

// A caller's requests in flight are limited over all its sessions and its
// stateless requests; another caller is served meanwhile, and the caller
// is served again once its requests end.
func TestQuotaInFlightPerCaller(t *testing.T) {
	srv := htServer(t)
	started, release := make(chan struct{}, 2), make(chan struct{})
	require.NoError(t, srv.AddTool(server.Tool{Name: "hold"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-release:
			return server.Text("held"), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}))
	var got tally[protocol.Quota]
	h := streamable.New(srv, streamable.WithQuotas(streamable.Quotas{InFlight: 2, OnRefuse: got.add}))
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })

	a1 := quotaInit(t, h, "192.0.2.1").Header().Get("Mcp-Session-Id")
	a2 := quotaInit(t, h, "192.0.2.1").Header().Get("Mcp-Session-Id")
	b := quotaInit(t, h, "192.0.2.2").Header().Get("Mcp-Session-Id")
	var wg sync.WaitGroup
	for _, sid := range []string{a1, a2} {
		wg.Go(func() {
			w := quotaPost(h, "192.0.2.1", sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold","arguments":{}}}`)
			assert.Equal(t, http.StatusOK, w.Code)
		})
		<-started
	}
	quotaRefusal(t, quotaPost(h, "192.0.2.1", a1, `{"jsonrpc":"2.0","id":3,"method":"ping"}`), protocol.QuotaInFlight, "1")
	stateless := `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	quotaRefusal(t, quotaPost(h, "192.0.2.1", "", stateless), protocol.QuotaInFlight, "1")
	assert.Equal(t, 2, got.get(protocol.QuotaInFlight))
	w := quotaPost(h, "192.0.2.2", b, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	assert.Equal(t, http.StatusOK, w.Code, "another caller is served: %s", w.Body)
	// Notifications are not requests in flight.
	w = quotaPost(h, "192.0.2.1", a1, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	assert.Equal(t, http.StatusAccepted, w.Code)

	close(release)
	wg.Wait()
	w = quotaPost(h, "192.0.2.1", a1, `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
	assert.Equal(t, http.StatusOK, w.Code, "served again once its requests ended: %s", w.Body)
}

// The in-flight quota holds under concurrency: of many callers' requests
// racing, none is refused below its caller's limit, and all are served.
func TestQuotaInFlightConcurrent(t *testing.T) {
	srv := htServer(t)
	h := streamable.New(srv, streamable.WithQuotas(streamable.Quotas{InFlight: 1000}))
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })
	sid := openIdle(t, h)
	var refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			for j := range 10 {
				w := idlePost(h, sid, `{"jsonrpc":"2.0","id":"`+itoa(i*100+j)+`","method":"ping"}`)
				if w.Code != http.StatusOK {
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, refused.Load())
}

// BenchmarkQuotaPing measures what the quotas add to a session's request
// served in process: compare the "default" and "none" runs.
func BenchmarkQuotaPing(b *testing.B) {
	for _, tc := range []struct {
		name string
		q    streamable.Quotas
	}{
		{"default", streamable.Quotas{}},
		{"none", streamable.Quotas{Sessions: -1, InFlight: -1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := htServer(b)
			h := streamable.New(srv, streamable.WithQuotas(tc.q))
			b.Cleanup(func() { _ = h.Close(); _ = srv.Close() })
			sid := openIdle(b, h)
			b.ReportAllocs()
			for b.Loop() {
				if w := idlePost(h, sid, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); w.Code != http.StatusOK {
					b.Fatalf("ping: %d", w.Code)
				}
			}
		})
	}
}

// fakeCounter is a SessionCounter that records its calls.
type fakeCounter struct {
	mu       sync.Mutex
	held     map[string]int
	fail     bool
	released []string
}

func (c *fakeCounter) Acquire(_ context.Context, caller, session string, limit int) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail {
		return false, errors.New("counter down")
	}
	if session == "" || c.held[caller] >= limit {
		return false, nil
	}
	c.held[caller]++
	return true, nil
}

func (c *fakeCounter) Release(caller, session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held[caller]--
	c.released = append(c.released, caller+" "+session)
}

// A SessionCounter replaces the Endpoint's own count: it is asked with the
// caller, the new session's id and the limit, its refusal refuses the
// initialize by quota, its error (the shared store does not answer) with
// 503 store_unavailable, and a session's end releases it.
func TestQuotaSessionCounter(t *testing.T) {
	srv := htServer(t)
	c := &fakeCounter{held: map[string]int{}}
	var got tally[protocol.Quota]
	var rejected tally[protocol.RejectReason]
	h := streamable.New(srv, streamable.WithQuotas(streamable.Quotas{Sessions: 1, SessionCounter: c, OnRefuse: got.add}),
		streamable.WithRejectHook(rejected.add))
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })

	w := quotaInit(t, h, "192.0.2.1")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	sid := w.Header().Get("Mcp-Session-Id")
	quotaRefusal(t, quotaInit(t, h, "192.0.2.1"), protocol.QuotaSessions, "10")
	assert.Equal(t, 1, rejected.get(protocol.RejectSessionLimit))
	c.mu.Lock()
	c.fail = true
	c.mu.Unlock()
	w = quotaInit(t, h, "192.0.2.2")
	require.Equal(t, http.StatusServiceUnavailable, w.Code, "the store does not answer: not a quota refusal; %s", w.Body.String())
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	assert.Contains(t, w.Body.String(), protocol.RejectStoreUnavailable.Message())
	assert.Equal(t, 1, got.get(protocol.QuotaSessions), "only the first refusal was by quota")
	assert.Equal(t, 1, rejected.get(protocol.RejectStoreUnavailable))

	del := httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil)
	del.RemoteAddr = "192.0.2.1:1"
	del.Header.Set("Mcp-Session-Id", sid)
	dw := httptest.NewRecorder()
	h.ServeHTTP(dw, del)
	require.Equal(t, http.StatusNoContent, dw.Code)
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Equal(t, []string{"192.0.2.1 " + sid}, c.released)
	assert.Zero(t, c.held["192.0.2.1"])
}

// A stateless request that the server refuses by a quota (a handler's
// QuotaRefusal, as the tool rate and the tool share answer) is answered
// 429 with Retry-After, as the endpoint's own refusals are; in a 2025
// session the refusal is an ordinary JSON-RPC answer.
func TestQuotaRefusalStateless429(t *testing.T) {
	srv := htServer(t)
	require.NoError(t, srv.AddTool(server.Tool{Name: "limited"}, func(context.Context, *server.CallToolRequest) (*server.CallToolResult, error) {
		return nil, server.QuotaRefusal(protocol.QuotaToolRate, 2500*time.Millisecond)
	}))
	h := streamable.New(srv)
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })

	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"limited","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(call))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "limited")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	quotaRefusal(t, w, protocol.QuotaToolRate, "3")

	sid := quotaInit(t, h, "192.0.2.1").Header().Get("Mcp-Session-Id")
	w = quotaPost(h, "192.0.2.1", sid, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"limited","arguments":{}}}`)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Empty(t, w.Header().Get("Retry-After"))
	assert.Contains(t, w.Body.String(), `"quota":"tool_rate"`)
}

// Without a principal, ten IPv6 addresses of one /64, which one host
// commonly owns, are one caller: they share its session quota, while an
// address of another /64 is another caller; an IPv4-mapped IPv6 address
// is the IPv4 address's caller.
func TestQuotaIPv6NetworkIsOneCaller(t *testing.T) {
	srv := htServer(t)
	var got tally[protocol.Quota]
	h := streamable.New(srv, streamable.WithQuotas(streamable.Quotas{Sessions: 5, OnRefuse: got.add}))
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })

	admitted := 0
	for i := range 10 {
		if w := quotaInit(t, h, fmt.Sprintf("[2001:db8:1:2::%x]", i+1)); w.Code == http.StatusOK {
			admitted++
		} else {
			quotaRefusal(t, w, protocol.QuotaSessions, "10")
		}
	}
	assert.Equal(t, 5, admitted, "ten addresses of one /64 share one caller's 5 sessions")
	assert.Equal(t, 5, got.get(protocol.QuotaSessions))
	w := quotaInit(t, h, "[2001:db8:1:3::1]")
	require.Equal(t, http.StatusOK, w.Code, "another /64 is another caller: %s", w.Body)

	for range 5 {
		require.Equal(t, http.StatusOK, quotaInit(t, h, "192.0.2.7").Code)
	}
	quotaRefusal(t, quotaInit(t, h, "[::ffff:192.0.2.7]"), protocol.QuotaSessions, "10")
	require.Equal(t, http.StatusOK, quotaInit(t, h, "192.0.2.8").Code, "IPv4 callers stay one per address")
}

// A session still answers only the principal that opened it, client
// included, while its quota is the user's: ten clients of one subject
// share the subject's sessions, and one client's session is unknown to
// another client of the same subject.
func TestQuotaSessionsPerUserOwnedPerClient(t *testing.T) {
	srv := htServer(t)
	principal := func(r *http.Request) string { return r.Header.Get("X-Principal") }
	h := streamable.New(srv, streamable.WithPrincipal(principal), streamable.WithQuotas(streamable.Quotas{Sessions: 5}))
	t.Cleanup(func() { _ = h.Close(); _ = srv.Close() })
	post := func(key, sid, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
		r.RemoteAddr = "192.0.2.1:40000"
		r.Header.Set("X-Principal", key)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
			r.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	// Keys as auth.Principal.Key makes them: issuer, subject, client.
	client := func(i int) string { return fmt.Sprintf("22:https://as.example.com 5:alice client-%d", i) }

	var sids []string
	for i := range 10 {
		if w := post(client(i), "", idleInit); w.Code == http.StatusOK {
			sids = append(sids, w.Header().Get("Mcp-Session-Id"))
		} else {
			quotaRefusal(t, w, protocol.QuotaSessions, "10")
		}
	}
	require.Len(t, sids, 5, "ten clients of one subject share its 5 sessions")
	require.Equal(t, http.StatusOK, post("22:https://as.example.com 3:bob client-0", "", idleInit).Code, "another subject is another caller")

	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	assert.Equal(t, http.StatusOK, post(client(0), sids[0], ping).Code, "the session answers its client")
	assert.Equal(t, http.StatusNotFound, post(client(1), sids[0], ping).Code, "and no other client of the same subject")
}

// gracePost serves one POST on h in process, as drainPost does (from
// 192.0.2.1, openIdle's address), with ctx as its request's context:
// ctx ending is the client closing the stream.
func gracePost(ctx context.Context, h http.Handler, sid, method, name, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
	} else {
		r.Header.Set("MCP-Protocol-Version", "2026-07-28")
		r.Header.Set("Mcp-Method", method)
		r.Header.Set("Mcp-Name", name)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A request whose stream the client closed stays in flight through
// server.StreamCloseGrace, and keeps its unit of the caller's in-flight
// quota: closing streams quickly gives a caller no more than its quota in
// flight (issue 66). In both eras, two calls fill a quota of 2; their
// streams close and their handlers end at once; while the grace lasts
// (the fake clock stands still), the caller's next request is refused by
// the quota; once it has passed, and not before, the caller is served.
func TestQuotaInFlightHoldsThroughStreamCloseGrace(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := htServer(t)
				started, ended := make(chan struct{}, 2), make(chan struct{}, 2)
				require.NoError(t, srv.AddTool(server.Tool{Name: "hold"}, func(ctx context.Context, _ *server.CallToolRequest) (*server.CallToolResult, error) {
					started <- struct{}{}
					<-ctx.Done()
					ended <- struct{}{}
					return nil, context.Cause(ctx)
				}))
				var got tally[protocol.Quota]
				h := streamable.New(srv, streamable.WithQuotas(streamable.Quotas{InFlight: 2, OnRefuse: got.add}))
				defer func() {
					_ = h.Close()
					_ = srv.Close()
					synctest.Wait()
				}()
				sid, meta := "", ""
				if era == "2025-11-25" {
					sid = openIdle(t, h)
				} else {
					meta = "," + drainMeta
				}
				call := func(ctx context.Context, id int, tool string) *httptest.ResponseRecorder {
					return gracePost(ctx, h, sid, "tools/call", tool, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"text":"again"}%s}}`, id, tool, meta))
				}

				begin := time.Now()
				var closeStreams []context.CancelFunc
				var done []chan struct{}
				for i := range 2 {
					ctx, cancel := context.WithCancel(t.Context())
					closeStreams = append(closeStreams, cancel)
					d := make(chan struct{})
					done = append(done, d)
					go func() {
						defer close(d)
						call(ctx, i+1, "hold")
					}()
					<-started
				}
				for _, closeStream := range closeStreams {
					closeStream()
				}
				<-ended
				<-ended
				synctest.Wait() // the POSTs wait out the grace, and nothing else runs
				for i, d := range done {
					select {
					case <-d:
						t.Fatalf("call %d: its POST ended before the grace did", i+1)
					default:
					}
				}
				quotaRefusal(t, call(t.Context(), 3, "echo"), protocol.QuotaInFlight, "1")
				assert.Equal(t, 1, got.get(protocol.QuotaInFlight), "refused by the in-flight quota during the grace")
				assert.Zero(t, time.Since(begin), "the fake clock has not moved")

				for _, d := range done {
					<-d // the clock moves to the grace's end
				}
				assert.GreaterOrEqual(t, time.Since(begin), server.StreamCloseGrace, "the calls stayed in flight through the grace")
				w := call(t.Context(), 4, "echo")
				require.Equal(t, http.StatusOK, w.Code, "served again once the grace passed: %s", w.Body)
				assert.Contains(t, w.Body.String(), `"text":"again"`)
				assert.Equal(t, 1, got.get(protocol.QuotaInFlight))
			})
		})
	}
}
