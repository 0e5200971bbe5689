package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport"
	"github.com/vigil-mcp/vigil/transport/memory"
	"github.com/vigil-mcp/vigil/transport/streamable"
)

// TestFanoutCostsNothingPerSession sends list_changed to 1,000 sessions,
// each with its standalone GET stream open over Streamable HTTP, and
// counts the allocations of a whole fan-out, until every stream has the
// event: once the streams' buffers exist, a fan-out allocates a constant
// amount (the message, its encoding, the session snapshot, a writer per
// share), nothing per session. Encoding the message, a goroutine or a
// buffer per session would cost thousands.
func TestFanoutCostsNothingPerSession(t *testing.T) {
	const sessions = 1000
	s, events := openStreams(t, sessions)
	fanout := func() {
		s.listChanged("tools")
		for range sessions {
			<-events
		}
	}
	fanout() // the first two fill each stream's queue and event buffer
	fanout()
	const rounds = 5
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range rounds {
		fanout()
	}
	runtime.ReadMemStats(&after)
	perFanout := float64(after.Mallocs-before.Mallocs) / rounds
	t.Logf("allocations per fan-out to %d sessions: %.1f", sessions, perFanout)
	assert.Less(t, perFanout, float64(sessions)/20, "a fan-out allocates per session")
}

// TestFanoutReachesGroupsAndTheRest: list_changed goes once to every
// session, whether its transport multicasts (Streamable HTTP GET streams)
// or not (a memory pipe), and a Streamable HTTP endpoint's sessions take
// no writer of their own once no session is outside a group.
func TestFanoutReachesGroupsAndTheRest(t *testing.T) {
	const streams = 3
	s, events := openStreams(t, streams)
	assert.Equal(t, int64(0), s.solo.Load(), "every Streamable HTTP session is in the endpoint's group")
	require.Len(t, s.multicasts.all(), 1, "one group: the endpoint's")

	client, conn := memory.NewPair()
	served := make(chan error, 1)
	go func() { served <- s.Serve(t.Context(), conn) }()
	require.NoError(t, client.WriteFrame(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)))
	_, err := client.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.solo.Load(), "a memory pipe is in no group")

	for round := range 2 {
		s.listChanged("tools")
		for range streams {
			<-events
		}
		m, err := client.Read(t.Context())
		require.NoError(t, err, "round %d", round)
		n, ok := m.(*transport.Request)
		require.True(t, ok, "round %d: %#v", round, m)
		assert.Equal(t, "notifications/tools/list_changed", n.Method)
	}
	assert.Empty(t, events, "a GET stream got an event twice")
	require.NoError(t, client.Close())
	require.NoError(t, <-served)
	assert.Equal(t, int64(0), s.solo.Load())
}

// TestFanoutSlowClientHoldsNobodyBack: a client whose GET stream takes
// nothing (its write blocks) holds back none of the other sessions' events;
// once its events exceed its stream's bound, that stream is cut (counted as
// backlog) while its session lives on.
func TestFanoutSlowClientHoldsNobodyBack(t *testing.T) {
	s := New()
	var cuts []streamable.StreamCut
	var cutsMu sync.Mutex
	h := streamable.New(s, streamable.WithStreamCutHook(func(c streamable.StreamCut) {
		cutsMu.Lock()
		cuts = append(cuts, c)
		cutsMu.Unlock()
	}))
	t.Cleanup(func() { _ = h.Close() })
	ctx, stop := context.WithCancel(t.Context())
	var streams sync.WaitGroup
	t.Cleanup(streams.Wait)
	t.Cleanup(stop)

	opened := make(chan struct{}, 2)
	fastEvents := make(chan struct{}, 4096)
	slowEvents := make(chan struct{}, 1)
	release := make(chan struct{})
	slowID := openSession(t, h)
	slow := &sseSink{header: http.Header{}, opened: opened, events: slowEvents, block: release}
	fast := &sseSink{header: http.Header{}, opened: opened, events: fastEvents}
	slowDone := make(chan struct{})
	streams.Go(func() {
		h.ServeHTTP(slow, fanoutRequest(ctx, http.MethodGet, slowID, ""))
		close(slowDone)
	})
	streams.Go(func() { h.ServeHTTP(fast, fanoutRequest(ctx, http.MethodGet, openSession(t, h), "")) })
	<-opened
	<-opened

	// Over the slow stream's bound, in rounds the fast client takes in
	// full before the next (it must not fall behind itself), while the
	// slow stream's write still blocks.
	const rounds, perRound = 20, 100
	for range rounds {
		for range perRound {
			s.notifySessions("notifications/tools/list_changed", nil, nil)
		}
		for range perRound {
			<-fastEvents
		}
	}
	close(release)
	<-slowDone // cut: its handler returned
	cutsMu.Lock()
	assert.Equal(t, []streamable.StreamCut{streamable.CutBacklog}, cuts)
	cutsMu.Unlock()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, fanoutRequest(t.Context(), http.MethodPost, slowID, `{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	assert.Equal(t, http.StatusOK, w.Code, "the slow client's session lives on: %s", w.Body)
}

// openStreams starts a server without list_changed debounce behind a
// Streamable HTTP endpoint, opens n sessions with their GET streams open
// (each writing to an sseSink) and returns the server and the channel
// that gets every list_changed event the streams write.
func openStreams(tb testing.TB, n int) (*Server, <-chan struct{}) {
	tb.Helper()
	s := New(WithListChangedDelay(0))
	h := streamable.New(s, streamable.WithQuotas(streamable.Quotas{Sessions: -1}))
	tb.Cleanup(func() { _ = h.Close() })
	events := make(chan struct{}, n)
	opened := make(chan struct{}, n)
	ctx, stop := context.WithCancel(tb.Context())
	var streams sync.WaitGroup
	tb.Cleanup(streams.Wait)
	tb.Cleanup(stop)
	for range n {
		r := fanoutRequest(ctx, http.MethodGet, openSession(tb, h), "")
		w := &sseSink{header: http.Header{}, opened: opened, events: events}
		streams.Go(func() { h.ServeHTTP(w, r) })
	}
	for range n {
		<-opened
	}
	return s, events
}

// openSession initializes a 2025-06-18 session on h and returns its id.
func openSession(t testing.TB, h http.Handler) string {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, fanoutRequest(t.Context(), http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	id := w.Header().Get("Mcp-Session-Id")
	require.NotEmpty(t, id)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, fanoutRequest(t.Context(), http.MethodPost, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	require.Equal(t, http.StatusAccepted, w.Code, w.Body.String())
	return id
}

// fanoutRequest is a request of a loopback client to an endpoint.
func fanoutRequest(ctx context.Context, method, session, body string) *http.Request {
	r := httptest.NewRequestWithContext(ctx, method, "http://127.0.0.1/mcp", strings.NewReader(body))
	r.Host, r.RemoteAddr = "127.0.0.1", "127.0.0.1:40000"
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Content-Type", "application/json")
	if session != "" {
		r.Header.Set("Mcp-Session-Id", session)
		r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	return r
}

// sseSink is the ResponseWriter of a GET stream: it reports the stream's
// start (its first flush) on opened and each list_changed event on events.
type sseSink struct {
	header http.Header
	opened chan<- struct{}
	events chan<- struct{}
	block  <-chan struct{} // when set, an event's write waits until it is closed
	once   sync.Once
}

func (w *sseSink) Header() http.Header { return w.header }
func (w *sseSink) WriteHeader(int)     {}
func (w *sseSink) Flush()              { w.once.Do(func() { w.opened <- struct{}{} }) }

func (w *sseSink) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("notifications/tools/list_changed")) {
		if w.block != nil {
			select {
			case w.events <- struct{}{}:
			default:
			}
			<-w.block
			return len(p), nil
		}
		w.events <- struct{}{}
	}
	return len(p), nil
}

// BenchmarkFanout is the cost of a list_changed fan-out to 1,000 sessions
// with their GET streams open, in process (the streams write to a sink, no
// socket), until every stream has it: ns/op over 1,000 is what vigil adds
// per notified session to what net/http and the kernel cost.
func BenchmarkFanout(b *testing.B) {
	const sessions = 1000
	s, events := openStreams(b, sessions)
	b.ReportAllocs()
	for b.Loop() {
		s.listChanged("tools")
		for range sessions {
			<-events
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*sessions), "ns/session")
}
