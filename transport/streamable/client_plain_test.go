package streamable_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-mcp/vigil/transport/streamable"
)

// countingServer is an HTTP server that answers every request with its
// body and counts the connections it accepted.
func countingServer(t *testing.T, tls bool) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(b)
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	if tls {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	return ts, &conns
}

// post POSTs body to url with c and returns what it answered.
func post(t *testing.T, c *http.Client, url, body string) string {
	resp, err := c.Post(url, "text/plain", strings.NewReader(body))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestClientPlainHTTPReusesConnections: requests one after the other share one
// connection; one the server closed while idle is not used again (the
// next request succeeds on a new one), nor one whose answer was not
// read to its end.
func TestClientPlainHTTPReusesConnections(t *testing.T) {
	ts, conns := countingServer(t, false)
	tr := streamable.PlainTransport(http.DefaultTransport.(*http.Transport).Clone(), 4)
	c := &http.Client{Transport: tr}
	t.Cleanup(c.CloseIdleConnections)
	for i := range 5 {
		assert.Equal(t, "call", post(t, c, ts.URL, "call"), "request %d", i)
	}
	assert.Equal(t, int64(1), conns.Load(), "one connection for five requests")

	ts.CloseClientConnections() // the server ends the idle connection
	assert.Equal(t, "after", post(t, c, ts.URL, "after"))
	assert.Equal(t, int64(2), conns.Load())

	resp, err := c.Post(ts.URL, "text/plain", strings.NewReader(strings.Repeat("x", 1<<16)))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close()) // unread: the connection cannot serve again
	assert.Equal(t, "next", post(t, c, ts.URL, "next"))
	assert.Equal(t, int64(3), conns.Load())
}

// TestClientPlainHTTPLeavesTLSToTheFallback: an https request goes through the
// fallback Transport (its TLS configuration), not the plain pool.
func TestClientPlainHTTPLeavesTLSToTheFallback(t *testing.T) {
	ts, conns := countingServer(t, true)
	fallback := ts.Client().Transport.(*http.Transport).Clone()
	c := &http.Client{Transport: streamable.PlainTransport(fallback, 4)}
	t.Cleanup(c.CloseIdleConnections)
	for range 3 {
		assert.Equal(t, "tls", post(t, c, ts.URL, "tls"))
	}
	assert.Equal(t, int64(1), conns.Load(), "the fallback keeps its connection")
}

// TestClientPlainHTTPBoundsTheAnswersHead: an answer whose headers never end
// fails its request once 10 MiB of them were read, as net/http's
// Transport's does, instead of being held without end.
func TestClientPlainHTTPBoundsTheAnswersHead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		line := []byte("X-Endless: " + strings.Repeat("x", 1000) + "\r\n")
		if _, err := conn.Write([]byte("HTTP/1.1 200 OK\r\n")); err != nil {
			return
		}
		for range 20 << 10 { // 20 MiB of headers
			if _, err := conn.Write(line); err != nil {
				return
			}
		}
	}()
	c := &http.Client{Transport: streamable.PlainTransport(http.DefaultTransport.(*http.Transport).Clone(), 4)}
	t.Cleanup(c.CloseIdleConnections)
	_, err = c.Post("http://"+ln.Addr().String(), "text/plain", strings.NewReader("q"))
	require.ErrorContains(t, err, "the answer's head is over 10 MiB")
}
