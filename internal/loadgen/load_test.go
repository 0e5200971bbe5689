package loadgen_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/internal/loadgen"
)

// echoServer answers each POST with its body; the request whose body is
// fail is answered 500.
func echoServer(t *testing.T, fail string) (*httptest.Server, *http.Client) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if string(body) == fail {
			http.Error(w, "scripted failure", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write(body)
	}))
	client := loadgen.NewClient()
	t.Cleanup(ts.Close)
	t.Cleanup(client.CloseIdleConnections)
	return ts, client
}

// TestRunSendsEachRequestOnce checks that every index from 1 to n is sent
// exactly once, by the workers together, and that each success has a
// latency, sorted.
func TestRunSendsEachRequestOnce(t *testing.T) {
	t.Parallel()
	ts, client := echoServer(t, "")
	const n, workers = 500, 8
	var mu sync.Mutex
	seen := map[int64]int{}
	lat, err := loadgen.Run(client, workers, n, []byte("id"), func(w int, i int64) *http.Request {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		require.Less(t, w, workers)
		return loadgen.Post(ts.URL, []byte("id "+strconv.FormatInt(i, 10)))
	})
	require.NoError(t, err)
	assert.Len(t, seen, n)
	for i := int64(1); i <= n; i++ {
		assert.Equal(t, 1, seen[i], "request %d", i)
	}
	assert.Len(t, lat, n)
	assert.IsNonDecreasing(t, lat)
}

// TestRunForStopsAtTheDeadline checks that RunFor sends requests, each
// index once, until its duration has passed, and no longer.
func TestRunForStopsAtTheDeadline(t *testing.T) {
	t.Parallel()
	ts, client := echoServer(t, "")
	var mu sync.Mutex
	seen := map[int64]int{}
	start := time.Now()
	lat, err := loadgen.RunFor(client, 4, 100*time.Millisecond, []byte("id"), func(_ int, i int64) *http.Request {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return loadgen.Post(ts.URL, []byte("id "+strconv.FormatInt(i, 10)))
	})
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.NotEmpty(t, lat)
	assert.Len(t, seen, len(lat), "one latency per request sent")
	for i := int64(1); i <= int64(len(lat)); i++ {
		assert.Equal(t, 1, seen[i], "request %d", i)
	}
	assert.IsNonDecreasing(t, lat)
	assert.GreaterOrEqual(t, elapsed, 100*time.Millisecond)
	assert.Less(t, elapsed, 5*time.Second, "the workers stop after the deadline")
}

// TestRunPacedHoldsTheRate checks that RunPaced starts no more requests
// than its rate allows over its duration (one turn at once, then
// perSecond a second), where RunFor on the same server sends as many as
// it can, and that each index is sent once.
func TestRunPacedHoldsTheRate(t *testing.T) {
	t.Parallel()
	ts, client := echoServer(t, "")
	var mu sync.Mutex
	seen := map[int64]int{}
	const perSecond, d = 100, 200 * time.Millisecond
	lat, err := loadgen.RunPaced(client, 4, d, perSecond, []byte("id"), func(_ int, i int64) *http.Request {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		return loadgen.Post(ts.URL, []byte("id "+strconv.FormatInt(i, 10)))
	})
	require.NoError(t, err)
	assert.NotEmpty(t, lat)
	assert.Len(t, seen, len(lat), "one latency per request sent")
	assert.LessOrEqual(t, len(lat), 1+perSecond*int(d/time.Millisecond)/1000, "no more than the rate allows")
}

// TestRunPacedEndsAtItsDuration checks that RunPaced's workers do not wait
// for turns after its duration: 64 workers at 50 a second, each taking one
// more turn, would add 1.28 s to a 200 ms run and understate its rate.
func TestRunPacedEndsAtItsDuration(t *testing.T) {
	t.Parallel()
	ts, client := echoServer(t, "")
	start := time.Now()
	lat, err := loadgen.RunPaced(client, 64, 200*time.Millisecond, 50, []byte("id"), func(_ int, i int64) *http.Request {
		return loadgen.Post(ts.URL, []byte("id "+strconv.FormatInt(i, 10)))
	})
	require.NoError(t, err)
	assert.NotEmpty(t, lat)
	assert.Less(t, time.Since(start), time.Second, "the workers stop at the duration instead of taking one more turn each")
}

// TestRunReportsFailures checks that a wrong status fails the run with the
// status and body, and that an answer without want fails it too.
func TestRunReportsFailures(t *testing.T) {
	t.Parallel()
	ts, client := echoServer(t, "id 7")
	lat, err := loadgen.Run(client, 1, 10, []byte("id"), func(_ int, i int64) *http.Request {
		return loadgen.Post(ts.URL, []byte("id "+strconv.FormatInt(i, 10)))
	})
	require.ErrorContains(t, err, "500 Internal Server Error: scripted failure")
	assert.Len(t, lat, 6, "the one worker stops at its first failure")

	_, err = loadgen.Run(client, 2, 4, []byte("absent"), func(_ int, i int64) *http.Request {
		return loadgen.Post(ts.URL, []byte("id "+strconv.FormatInt(i, 10)))
	})
	require.ErrorContains(t, err, "200 OK: id")
}

// TestPostHeaders checks what Streamable HTTP requires of a POST.
func TestPostHeaders(t *testing.T) {
	t.Parallel()
	req := loadgen.Post("http://127.0.0.1/mcp", []byte(`{}`))
	assert.Equal(t, http.MethodPost, req.Method)
	assert.Equal(t, "application/json", req.Header.Get("Content-Type"))
	assert.Equal(t, "application/json, text/event-stream", req.Header.Get("Accept"))
}

// TestProcessCPUAdvances checks that the CPU clock moves with work, where
// there is one.
func TestProcessCPUAdvances(t *testing.T) {
	t.Parallel()
	before, ok := loadgen.ProcessCPU()
	if !ok {
		t.Skip("no /proc/self/stat on this system")
	}
	x := 0
	for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); {
		x++ // spin: at least one 10 ms tick of CPU
	}
	after, _ := loadgen.ProcessCPU()
	assert.Greater(t, after, before, "after %d spins", x)
}

// TestParseStatCPU reads utime and stime past a command name that holds
// spaces and a parenthesis, and rejects what is not a stat line.
func TestParseStatCPU(t *testing.T) {
	t.Parallel()
	line := []byte("4242 (vigil (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 9 0 100 1000 500\n")
	cpu, ok := loadgen.ParseStatCPU(line)
	require.True(t, ok)
	assert.Equal(t, 325*10*time.Millisecond, cpu)
	for _, bad := range []string{"", "4242 vigil S 1", "4242 (vigil) S 1 2 3", "4242 (vigil) S 1 2 3 4 5 6 7 8 9 10 x 75"} {
		_, ok := loadgen.ParseStatCPU([]byte(bad))
		assert.False(t, ok, "%q", bad)
	}
}

// TestCPUOfSelf checks that CPUOf reads another pid's file as ProcessCPU
// reads its own, and fails for a process that does not exist.
func TestCPUOfSelf(t *testing.T) {
	t.Parallel()
	if _, ok := loadgen.ProcessCPU(); !ok {
		t.Skip("no /proc/self/stat on this system")
	}
	_, ok := loadgen.CPUOf(os.Getpid())
	assert.True(t, ok)
	_, ok = loadgen.CPUOf(-1)
	assert.False(t, ok)
}

func ExampleRun() {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer ts.Close()
	client := loadgen.NewClient()
	defer client.CloseIdleConnections()

	lat, err := loadgen.Run(client, 4, 100, []byte(`"result"`), func(_ int, i int64) *http.Request {
		return loadgen.Post(ts.URL, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
	})
	fmt.Println(len(lat), err)
	// Output: 100 <nil>
}

// TestRunForEachKeepsWorkersApart checks that RunForEach sends worker w's
// requests with clients[w]: with a transport each, no connection carries
// two workers' requests. (A worker may use more than one: net/http puts a
// connection back in its idle pool just after the body's end is read, so a
// request sent at once may dial another.)
func TestRunForEachKeepsWorkersApart(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	conns := map[string]map[string]bool{} // worker -> remote addresses
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		worker := r.Header.Get("Worker")
		if conns[worker] == nil {
			conns[worker] = map[string]bool{}
		}
		conns[worker][r.RemoteAddr] = true
		mu.Unlock()
		_, _ = w.Write(body)
	}))
	t.Cleanup(ts.Close)
	clients := make([]*http.Client, 3)
	for i := range clients {
		clients[i] = loadgen.NewClient()
		t.Cleanup(clients[i].CloseIdleConnections)
	}
	_, err := loadgen.RunForEach(clients, 300*time.Millisecond, []byte("id"), func(w int, i int64) *http.Request {
		req := loadgen.Post(ts.URL, []byte("id "+strconv.FormatInt(i, 10)))
		req.Header.Set("Worker", strconv.Itoa(w))
		return req
	})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	// A worker whose goroutine started after the deadline sends nothing:
	// the run is timed. Two that sent are enough to tell them apart.
	require.GreaterOrEqual(t, len(conns), 2, "workers that sent")
	seen := map[string]string{}
	for worker, addrs := range conns {
		for a := range addrs {
			assert.NotContains(t, seen, a, "worker %s shares worker %s's connection", worker, seen[a])
			seen[a] = worker
		}
	}
}
