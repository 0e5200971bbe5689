package streamable_test

// The cost of idle 2025 sessions: an idle session holds no goroutine and no
// timer of its own, and little memory. To measure the bytes per idle
// session:
//
//	go test -run '^$' -bench IdleSessions -benchtime=1x ./transport/streamable/

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/server"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// idleInit is the initialize request of an idle session.
const idleInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"idle","version":"1"}}}`

// idlePost serves one POST on h in process and returns the recorder.
func idlePost(h http.Handler, sid, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
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

// openIdle opens a session on h and completes its handshake, as a client
// would, and returns its id.
func openIdle(tb testing.TB, h http.Handler) string {
	w := idlePost(h, "", idleInit)
	sid := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || sid == "" {
		tb.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	if w := idlePost(h, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); w.Code != http.StatusAccepted {
		tb.Fatalf("notifications/initialized: %d %s", w.Code, w.Body)
	}
	return sid
}

// pingIdle checks that session sid still answers.
func pingIdle(tb testing.TB, h http.Handler, sid string) {
	w := idlePost(h, sid, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"result":{}`) {
		tb.Fatalf("ping on session %s: %d %s", sid, w.Code, w.Body)
	}
}

// Idle sessions hold no goroutines: opening 1,000 of them over loopback
// HTTP grows the goroutine count by a constant (the HTTP server's own), not
// by the sessions, with or without an event store; every one still
// answers.
func TestIdleSessionsHoldNoGoroutines(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []streamable.Option
	}{
		{"plain", nil},
		{"resumable", []streamable.Option{streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			htWatchdog(t)
			const n = 1000
			srv := server.New()
			// n+1 sessions of one caller: over its default session quota.
			h := streamable.New(srv, append(tc.opts, streamable.WithIdleTimeout(time.Hour), streamable.WithQuotas(streamable.Quotas{Sessions: -1}))...)
			ts := httptest.NewServer(h)
			client := ts.Client()
			t.Cleanup(func() {
				client.CloseIdleConnections()
				_ = h.Close()
				ts.Close()
				_ = srv.Close()
			})
			e := &htEnv{t: t, srv: srv, h: h, ts: ts, client: client}
			e.initialize(`{}`) // warm up: the client's connection, the shared expiry
			before := settledGoroutines()
			sids := make([]string, n)
			for i := range sids {
				sids[i] = e.initialize(`{}`)
			}
			after := settledGoroutines()
			assert.Less(t, after-before, 20, "goroutines grew from %d to %d with %d idle sessions", before, after, n)
			assert.Len(t, srv.Sessions(), n+1)
			for _, sid := range sids {
				_, msgs := e.call(sid, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
				require.Len(t, msgs, 1)
				require.Nil(t, msgs[0].Error)
			}
		})
	}
}

// settledGoroutines returns the goroutine count once it stops changing:
// goroutines that end on their own (a finished HTTP request's) are gone.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 50 {
		time.Sleep(10 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}

// The shared idle expiry ends each idle session at its own deadline, which
// every POST pushes back, and cancels its handlers with the
// transport-close cause, as before; the endpoint's Close stops it.
func TestIdleExpiryShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const idle = time.Minute
		rec := &endRecorder{}
		srv := server.New(server.WithObserver(server.Observer{SessionEnded: rec.SessionEnded}))
		h := streamable.New(srv, streamable.WithIdleTimeout(idle))
		defer func() {
			_ = h.Close()
			_ = srv.Close()
			synctest.Wait()
		}()

		first := openIdle(t, h)
		time.Sleep(idle / 2)
		second := openIdle(t, h)
		time.Sleep(idle/2 - time.Second)
		pingIdle(t, h, first) // the first session's deadline is pushed back
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Empty(t, rec.causes(), "no session expired yet")

		time.Sleep(idle/2 - time.Second)
		synctest.Wait()
		assert.Empty(t, rec.causes(), "a second before the second session expires")
		time.Sleep(time.Second)
		synctest.Wait()
		causes := rec.causes()
		require.Len(t, causes, 1, "the second session expired")
		require.ErrorIs(t, causes[0], server.ErrTransportClose)
		assert.Equal(t, http.StatusNotFound, idlePost(h, second, `{"jsonrpc":"2.0","id":1,"method":"ping"}`).Code)
		pingIdle(t, h, first)

		time.Sleep(idle)
		synctest.Wait()
		assert.Len(t, rec.causes(), 2, "the first session expired a minute after its last POST")
		assert.Equal(t, http.StatusNotFound, idlePost(h, first, `{"jsonrpc":"2.0","id":1,"method":"ping"}`).Code)
	})
}

// endRecorder records the causes sessions end with.
type endRecorder struct {
	mu    sync.Mutex
	ended []error
}

func (r *endRecorder) SessionEnded(_ context.Context, _ *server.Session, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, cause)
}

func (r *endRecorder) causes() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.ended...)
}

// BenchmarkIdleSessions opens 10,000 idle sessions in process (initialize
// and notifications/initialized, then nothing) and reports what each one
// holds: heap and goroutine stack bytes, and goroutines.
func BenchmarkIdleSessions(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchIdle(b) })
	b.Run("resumable", func(b *testing.B) {
		benchIdle(b, streamable.WithEventStore(streamable.NewMemoryEventStore(0, 0)))
	})
}

func benchIdle(b *testing.B, opts ...streamable.Option) {
	const n = 10000
	for range b.N {
		b.StopTimer()
		srv := server.New()
		h := streamable.New(srv, append(opts, streamable.WithMaxSessions(n+1), streamable.WithQuotas(streamable.Quotas{Sessions: -1}))...)
		openIdle(b, h) // warm up
		before := idleMem()
		g0 := runtime.NumGoroutine()
		b.StartTimer()
		sids := make([]string, n)
		for i := range sids {
			sids[i] = openIdle(b, h)
		}
		b.StopTimer()
		g1 := runtime.NumGoroutine()
		after := idleMem()
		heap, stack := after.heap-before.heap, after.stack-before.stack
		b.ReportMetric(float64(heap)/n, "heap-B/session")
		b.ReportMetric(float64(stack)/n, "stack-B/session")
		b.ReportMetric(float64(heap+stack)/n, "B/session")
		b.ReportMetric(float64(g1-g0)/n, "goroutines/session")
		for _, sid := range sids[:100] {
			pingIdle(b, h, sid)
		}
		_ = h.Close()
		_ = srv.Close()
		runtime.KeepAlive(sids)
	}
}

type memUse struct{ heap, stack int64 }

// idleMem returns the heap and stack memory in use after a collection.
func idleMem() memUse {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memUse{heap: int64(ms.HeapInuse), stack: int64(ms.StackInuse)}
}
