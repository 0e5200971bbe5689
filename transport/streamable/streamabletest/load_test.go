package streamabletest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/streamable/streamabletest"
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
	client := streamabletest.NewClient()
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
	lat, err := streamabletest.Run(client, workers, n, []byte("id"), func(w int, i int64) *http.Request {
		mu.Lock()
		seen[i]++
		mu.Unlock()
		require.Less(t, w, workers)
		return streamabletest.Post(ts.URL, []byte("id "+strconv.FormatInt(i, 10)))
	})
	require.NoError(t, err)
	assert.Len(t, seen, n)
	for i := int64(1); i <= n; i++ {
		assert.Equal(t, 1, seen[i], "request %d", i)
	}
	assert.Len(t, lat, n)
	assert.IsNonDecreasing(t, lat)
}

// TestRunReportsFailures checks that a wrong status fails the run with the
// status and body, and that an answer without want fails it too.
func TestRunReportsFailures(t *testing.T) {
	t.Parallel()
	ts, client := echoServer(t, "id 7")
	lat, err := streamabletest.Run(client, 1, 10, []byte("id"), func(_ int, i int64) *http.Request {
		return streamabletest.Post(ts.URL, []byte("id "+strconv.FormatInt(i, 10)))
	})
	require.ErrorContains(t, err, "500 Internal Server Error: scripted failure")
	assert.Len(t, lat, 6, "the one worker stops at its first failure")

	_, err = streamabletest.Run(client, 2, 4, []byte("absent"), func(_ int, i int64) *http.Request {
		return streamabletest.Post(ts.URL, []byte("id "+strconv.FormatInt(i, 10)))
	})
	require.ErrorContains(t, err, "200 OK: id")
}

// TestPostHeaders checks what Streamable HTTP requires of a POST.
func TestPostHeaders(t *testing.T) {
	t.Parallel()
	req := streamabletest.Post("http://127.0.0.1/mcp", []byte(`{}`))
	assert.Equal(t, http.MethodPost, req.Method)
	assert.Equal(t, "application/json", req.Header.Get("Content-Type"))
	assert.Equal(t, "application/json, text/event-stream", req.Header.Get("Accept"))
}

// TestProcessCPUAdvances checks that the CPU clock moves with work, where
// there is one.
func TestProcessCPUAdvances(t *testing.T) {
	t.Parallel()
	before, ok := streamabletest.ProcessCPU()
	if !ok {
		t.Skip("no /proc/self/stat on this system")
	}
	x := 0
	for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); {
		x++ // spin: at least one 10 ms tick of CPU
	}
	after, _ := streamabletest.ProcessCPU()
	assert.Greater(t, after, before, "after %d spins", x)
}

func ExampleRun() {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer ts.Close()
	client := streamabletest.NewClient()
	defer client.CloseIdleConnections()

	lat, err := streamabletest.Run(client, 4, 100, []byte(`"result"`), func(_ int, i int64) *http.Request {
		return streamabletest.Post(ts.URL, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i))
	})
	fmt.Println(len(lat), err)
	// Output: 100 <nil>
}
