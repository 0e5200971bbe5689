package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"1", time.Second, true},
		{"0", 0, true},
		{"Wed, 25 Nov 2026 12:00:03 GMT", 3 * time.Second, true},
		{"Wed, 25 Nov 2026 11:59:00 GMT", 0, true}, // a date past: at once
		{"-1", 0, false},
		{"soon", 0, false},
	} {
		got, ok := retryAfter(tc.header, now)
		assert.Equal(t, tc.ok, ok, "%q", tc.header)
		assert.Equal(t, tc.want, got, "%q", tc.header)
	}
}

func TestParseClients(t *testing.T) {
	var cfg config
	require.NoError(t, cfg.parseClients("32, 512,2048"))
	assert.Equal(t, []int{32, 512, 2048}, cfg.clients)
	for _, bad := range []string{"", "32,", "0", "x", "-4", "32,512,32"} {
		require.Error(t, (&config{}).parseClients(bad), "%q", bad)
	}
	assert.Equal(t, "32, 512 and 2,048", joinInts([]int{32, 512, 2048}))
	assert.Equal(t, "8", joinInts([]int{8}))
}

// TestOverloadPlan: honoring Retry-After, each rep runs one server's
// rounds at every level back to back, then the other's; the levels'
// order reverses and the first server changes from rep to rep; ignoring
// it, one rep the same way.
func TestOverloadPlan(t *testing.T) {
	floor, vigil := target{name: "floor"}, target{name: "vigil"}
	var got []string
	for _, r := range overloadPlan([]int{32, 512, 2048}, []target{floor, vigil}, 3) {
		got = append(got, fmt.Sprintf("%s %d %s %d", r.mode.name, r.rep, r.server.name, r.clients))
	}
	assert.Equal(t, []string{
		"honor 0 floor 32", "honor 0 floor 512", "honor 0 floor 2048",
		"honor 0 vigil 32", "honor 0 vigil 512", "honor 0 vigil 2048",
		"honor 1 vigil 2048", "honor 1 vigil 512", "honor 1 vigil 32",
		"honor 1 floor 2048", "honor 1 floor 512", "honor 1 floor 32",
		"honor 2 floor 32", "honor 2 floor 512", "honor 2 floor 2048",
		"honor 2 vigil 32", "honor 2 vigil 512", "honor 2 vigil 2048",
		"ignore 0 floor 32", "ignore 0 floor 512", "ignore 0 floor 2048",
		"ignore 0 vigil 32", "ignore 0 vigil 512", "ignore 0 vigil 2048",
	}, got)
	levels := []int{32, 512}
	assert.Equal(t, []int{512, 32}, alternate(levels, 1))
	assert.Equal(t, []int{32, 512}, levels, "alternate leaves its argument as it is")
}

// roundOf returns a round of ok answers over a second, with the given
// p99 and refusals.
func roundOf(ok int64, p99 time.Duration, refused int64) overloadRound {
	return overloadRound{
		ok: ok, latencies: []time.Duration{p99}, refused: refused, withRetry: refused, elapsed: time.Second, measured: time.Second,
		serverCPU: time.Duration(ok) * time.Microsecond, clientCPU: time.Duration(ok) * 2 * time.Microsecond,
	}
}

// TestSummarize: a level's "of peak" is the median of the reps' ratios
// to their own peaks, not the ratio of the medians, and its other
// figures are medians over the reps; refusals and failures are summed.
func TestSummarize(t *testing.T) {
	// The machine slows down from rep to rep: the ratio of the median
	// goodputs, 700 over 1,000, is not the median of the reps' ratios.
	peaks := []overloadRound{roundOf(2000, time.Millisecond, 0), roundOf(1000, time.Millisecond, 0), roundOf(500, time.Millisecond, 0)}
	rounds := []overloadRound{roundOf(1800, 30*time.Millisecond, 10), roundOf(700, 50*time.Millisecond, 20), roundOf(480, 40*time.Millisecond, 30)}
	rounds[1].failed = 2
	s := summarize(rounds, peaks)
	assert.InDeltaSlice(t, []float64{0.9, 0.7, 0.96}, s.ofPeak, 1e-9, "in rep order")
	assert.InDelta(t, 0.9, s.medianOfPeak(), 1e-9)
	assert.InDelta(t, 700, s.goodput, 1e-9)
	assert.Equal(t, 40*time.Millisecond, s.p99)
	assert.InDelta(t, 20, s.refusedPerSecond, 1e-9)
	assert.Equal(t, time.Microsecond, s.cpu)
	assert.Equal(t, 2*time.Microsecond, s.clientCPU)
	assert.Equal(t, int64(60), s.sum.refused)
	assert.Equal(t, "all", s.sum.retryColumn())
	assert.Equal(t, int64(2), s.sum.failed)
	assert.Equal(t, "90%, 70%, 96% (median 90%)", s.spread())

	// The peak's own summary is 100% of itself; two reps' median is the
	// mean of their ratios; a peak without answers is 0.
	assert.Equal(t, []float64{1, 1, 1}, summarize(peaks, peaks).ofPeak)
	s = summarize(rounds[:2], []overloadRound{peaks[0], peaks[2]})
	assert.InDelta(t, (0.9+1.4)/2, s.medianOfPeak(), 1e-9)
	assert.Zero(t, summarize(rounds[:1], []overloadRound{roundOf(0, 0, 5)}).medianOfPeak())
}

// keepAliveTo returns a keep-alive connection to url in session "s",
// closed when the test ends.
func keepAliveTo(t *testing.T, url string) *keepAlive {
	k, err := newKeepAlive(url, "s", version, "")
	require.NoError(t, err)
	t.Cleanup(k.close)
	return k
}

// TestKeepAlive: the client sends the session's headers and its body,
// keeps one connection for many requests, reads a chunked answer, and
// dials again after an answer that closes the connection.
func TestKeepAlive(t *testing.T) {
	var conns atomic.Int64
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/mcp" || r.Header.Get("Mcp-Session-Id") != "s" || r.Header.Get("MCP-Protocol-Version") != version ||
			!strings.Contains(r.Header.Get("Accept"), "text/event-stream") || string(body) != `{"n":1}` {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		switch n.Add(1) {
		case 3:
			w.Header().Set("Connection", "close")
		case 4:
			_, _ = w.Write([]byte("chunk "))
			w.(http.Flusher).Flush() // no Content-Length: a chunked answer
		}
		_, _ = w.Write([]byte("answer"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	k := keepAliveTo(t, srv.URL+"/mcp")
	var buf bytes.Buffer
	for i := 1; i <= 5; i++ {
		resp, err := k.post([]byte(`{"n":1}`), &buf)
		require.NoError(t, err, "request %d", i)
		require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i, buf.String())
		if i == 4 {
			assert.Equal(t, "chunk answer", buf.String())
		} else {
			assert.Equal(t, "answer", buf.String())
		}
		if i == 3 {
			assert.Nil(t, k.conn, "an answer with Connection: close closes the connection")
		}
	}
	assert.Equal(t, int64(2), conns.Load(), "one connection, and one more after the answer that closed it")
	_, err := newKeepAlive("https://example.com/mcp", "s", version, "")
	require.Error(t, err, "only http:// endpoints")
}

// TestOverloadClientRefusals runs a client against a server that refuses
// every request with 503 and Retry-After: 1. Honoring it, the client
// waits until the deadline after its first refusal; ignoring it, it
// retries at once, many times; each refusal is counted with its header.
func TestOverloadClientRefusals(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "1")
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()

	r := overloadClient(keepAliveTo(t, srv.URL), 0, true, time.Time{}, time.Now().Add(300*time.Millisecond))
	assert.Equal(t, int64(1), r.refused, "a client honoring Retry-After: 1 sends once in 300ms")
	assert.Equal(t, int64(1), r.withRetry)
	assert.Equal(t, int64(1), requests.Load())

	r = overloadClient(keepAliveTo(t, srv.URL), 0, false, time.Time{}, time.Now().Add(300*time.Millisecond))
	assert.Greater(t, r.refused, int64(1), "a client ignoring Retry-After retries at once")
	assert.Equal(t, r.refused, r.withRetry)
	assert.Zero(t, r.ok)
	assert.Zero(t, r.failed)
}

// TestOverloadClientCounts checks that only an answer with the echo is
// goodput: a JSON-RPC error in a 200 and another status are failures, and
// a refusal without Retry-After is counted as such.
func TestOverloadClientCounts(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch n.Add(1) % 4 {
		case 0:
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{` + echoAnswer + `}}`))
		case 1:
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"busy"}}`))
		case 2:
			http.Error(w, "no", http.StatusTooManyRequests) // no Retry-After
		case 3:
			http.Error(w, "bad", http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	r := overloadClient(keepAliveTo(t, srv.URL), 0, true, time.Time{}, time.Now().Add(100*time.Millisecond))
	total := n.Load()
	require.Greater(t, total, int64(8))
	assert.Equal(t, total, r.ok+r.failed+r.refused)
	assert.InDelta(t, float64(total)/4, float64(r.ok), 1)
	assert.InDelta(t, float64(total)/4, float64(r.refused), 1)
	assert.Zero(t, r.withRetry)
	assert.Len(t, r.latencies, int(r.ok))
	assert.Contains(t, r.firstFail, "busy")
}

// TestOverloadClientRamp: answers to calls sent before from (the round's
// ramp) are neither goodput nor latencies, while refusals are counted
// from the start.
func TestOverloadClientRamp(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1)%2 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{` + echoAnswer + `}}`))
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	deadline := time.Now().Add(100 * time.Millisecond)
	r := overloadClient(keepAliveTo(t, srv.URL), 0, false, deadline, deadline)
	require.Greater(t, n.Load(), int64(4))
	assert.Zero(t, r.ok, "every call was sent in the ramp")
	assert.Empty(t, r.latencies)
	assert.InDelta(t, float64(n.Load())/2, float64(r.refused), 1)
}

// TestStreamSetCounts feeds two streams their events: the signal on done
// comes with the last stream's event of the fan-out, not before, and a
// stream with a duplicate or a missing event is short.
func TestStreamSetCounts(t *testing.T) {
	s := &streamSet{n: 2, seen: make([]atomic.Int64, 2), done: make(chan time.Time, 1)}
	event := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
	other := ": ping\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"
	s.expect(1)
	s.read(0, bufio.NewReader(strings.NewReader(other+event)))
	select {
	case <-s.done:
		t.Fatal("done before the second stream has the event")
	default:
	}
	assert.Equal(t, 1, s.reached(1))
	s.read(1, bufio.NewReader(strings.NewReader(event)))
	select {
	case <-s.done:
	default:
		t.Fatal("no done once every stream has the event")
	}
	assert.Zero(t, s.short(1))
	assert.Equal(t, int64(2), s.ended.Load())

	s.expect(2)
	s.read(0, bufio.NewReader(strings.NewReader(event+event)))
	assert.Equal(t, 2, s.short(2), "one stream has 3 events, the other 1")
}

func TestVerdict(t *testing.T) {
	var b bytes.Buffer
	verdict(&b, true, "a %d", 1)
	verdict(&b, false, "b")
	assert.Equal(t, "PASS  a 1\nFAIL  b\n", b.String())
}

// TestOpenStreams opens one session more than an address carries against
// a server that answers like the floor: the sessions come from two
// loopback addresses, each stream is read through net/http's chunked
// encoding, and done signals once every stream has the fan-out's event.
func TestOpenStreams(t *testing.T) {
	const n = sessionsPerAddress + 1
	fire := make(chan struct{})
	var mu sync.Mutex
	initFrom := make(map[string]int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		switch {
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select {
			case <-fire:
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, ": ping\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case strings.Contains(r.Header.Get("Mcp-Session-Id"), "s"):
			w.WriteHeader(http.StatusAccepted) // notifications/initialized
		default:
			mu.Lock()
			initFrom[host]++
			mu.Unlock()
			w.Header().Set("Mcp-Session-Id", "s")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":0,"result":{}}`)
		}
	}))
	defer srv.Close()
	set, err := openStreams(srv.URL+"/mcp", n)
	defer set.close()
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"127.1.0.1": sessionsPerAddress, "127.1.0.2": 1}, initFrom)
	set.expect(1)
	close(fire)
	select {
	case <-set.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d of %d streams have the event", set.reached(1), n)
	}
	assert.Zero(t, set.short(1))
}
