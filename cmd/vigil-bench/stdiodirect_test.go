package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeStdioEnv makes the test binary stdiopeer.ServeFake, a fake MCP
// server over stdio (TestMain).
const fakeStdioEnv = "VIGIL_BENCH_FAKE_STDIO"

// TestStdioClient: the direct client initializes, passes over the
// notifications between answers, times each call and refuses an answer
// without what it wants.
func TestStdioClient(t *testing.T) {
	t.Setenv(fakeStdioEnv, "1")
	self, err := os.Executable()
	require.NoError(t, err)
	c, err := startStdioClient(t.Context(), self, echoArgs{arguments: `{"text":"hello"}`, want: `"text":"tools/call`})
	require.NoError(t, err)
	defer c.close()
	callsTimed(t, c.call)
	c.args.want = "Echo: hello"
	_, err = c.call()
	assert.ErrorContains(t, err, "without")
}

// TestHTTPEchoClient: the gateway's client opens its session, makes
// every call on one connection of its own, dials another after an answer
// that closes it or when the server closed it idle, times each call and
// refuses an answer without what it wants, or with another status.
func TestHTTPEchoClient(t *testing.T) {
	var mu sync.Mutex
	callers := map[string]int{} // the calls' remote addresses
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch {
		case bytes.Contains(body, []byte(`"initialize"`)):
			w.Header().Set("Mcp-Session-Id", "s1")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":0,"result":{}}`)
		case r.Header.Get("Mcp-Session-Id") != "s1":
			http.Error(w, "no session", http.StatusBadRequest)
		case bytes.Contains(body, []byte(`"notifications/initialized"`)):
			w.WriteHeader(http.StatusAccepted)
		case bytes.Contains(body, []byte(`"last"`)):
			w.Header().Set("Connection", "close")
			_, _ = w.Write(body)
		case bytes.Contains(body, []byte(`"fail"`)):
			http.Error(w, `{"echo":"fail"}`, http.StatusInternalServerError)
		default:
			mu.Lock()
			callers[r.RemoteAddr]++
			mu.Unlock()
			_, _ = w.Write(body) // the call itself, arguments and all
		}
	}))
	defer srv.Close()
	c, err := dialEchoClient(srv.URL+"/mcp", echoArgs{arguments: `{"text":"hello"}`, want: `"text":"hello"`})
	require.NoError(t, err)
	defer c.close()
	callsTimed(t, c.call)
	mu.Lock()
	assert.Len(t, callers, 1, "every call on the client's one connection")
	mu.Unlock()
	c.args = echoArgs{arguments: `{"text":"last"}`, want: "last"}
	_, err = c.call()
	require.NoError(t, err)
	c.args = echoArgs{arguments: `{"text":"hello"}`, want: `"text":"hello"`}
	_, err = c.call()
	require.NoError(t, err, "a call after the server closed the connection")
	assert.Equal(t, 1, c.redials())
	mu.Lock()
	assert.Len(t, callers, 2, "the call after on a connection of its own")
	mu.Unlock()
	srv.CloseClientConnections() // as a server does with an idle connection
	_, err = c.call()
	require.NoError(t, err, "a call after the server closed the idle connection")
	assert.Equal(t, 2, c.redials())
	mu.Lock()
	assert.Len(t, callers, 3, "made again on a new connection")
	mu.Unlock()
	c.args.want = "Echo: hello"
	_, err = c.call()
	require.ErrorContains(t, err, "200 OK")
	c.args = echoArgs{arguments: `{"text":"fail"}`, want: "fail"}
	_, err = c.call()
	require.ErrorContains(t, err, "500")
}

// callsTimed makes three calls with call, each answered and timed.
func callsTimed(t *testing.T, call func() (time.Duration, error)) {
	t.Helper()
	for range 3 {
		d, err := call()
		require.NoError(t, err)
		assert.Positive(t, d)
	}
}
