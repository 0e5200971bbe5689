package vigil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each connection's context goes through the service's own, then through
// each function of WithConnContext in the order given.
func TestConnContextsChainAfterTheService(t *testing.T) {
	type key struct{}
	var cfg config
	for _, name := range []string{"first", "second"} {
		WithConnContext(func(ctx context.Context, _ net.Conn) context.Context {
			prev, _ := ctx.Value(key{}).(string)
			return context.WithValue(ctx, key{}, prev+name+";")
		}).apply(&cfg)
	}
	s := &Service{cfg: cfg, Logger: slog.New(slog.DiscardHandler)}
	client, srv := net.Pipe()
	defer func() { _ = client.Close(); _ = srv.Close() }()
	conn := &remoteConn{Conn: srv, remote: &net.TCPAddr{IP: net.ParseIP("127.0.0.2"), Port: 4242}}
	ctx := s.newHTTPServer(http.NotFoundHandler()).ConnContext(t.Context(), conn)
	assert.Equal(t, "first;second;", ctx.Value(key{}), "in the order given")
}

// The HTTP servers' timeouts: 30s for a body and 2 minutes idle by
// default, WithHTTPTimeouts' otherwise, none for a negative value.
func TestHTTPTimeouts(t *testing.T) {
	hs := (&Service{Logger: slog.New(slog.DiscardHandler)}).newHTTPServer(http.NotFoundHandler())
	assert.Equal(t, 30*time.Second, hs.ReadTimeout)
	assert.Equal(t, 2*time.Minute, hs.IdleTimeout)
	var cfg config
	WithHTTPTimeouts(-1, -1).apply(&cfg)
	hs = (&Service{cfg: cfg, Logger: slog.New(slog.DiscardHandler)}).newHTTPServer(http.NotFoundHandler())
	assert.Zero(t, hs.ReadTimeout, "no limit")
	assert.Negative(t, hs.IdleTimeout, "no limit (0 would be ReadTimeout's)")
}

// remoteConn is a net.Conn with the remote address given.
type remoteConn struct {
	net.Conn
	remote net.Addr
}

func (c *remoteConn) RemoteAddr() net.Addr { return c.remote }

// hygieneServer serves h as ListenAndServe does (newHTTPServer) with the given
// timeouts on a loopback port, and returns its address; it is closed at
// the end of the test.
func hygieneServer(t *testing.T, h http.Handler, bodyTimeout, idleTimeout time.Duration) string {
	t.Helper()
	s := &Service{cfg: config{bodyTimeout: bodyTimeout, idleTimeout: idleTimeout}, Logger: slog.New(slog.DiscardHandler)}
	hs := s.newHTTPServer(h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		require.ErrorIs(t, <-served, http.ErrServerClosed)
	})
	return ln.Addr().String()
}

// dial connects to addr; every read and write fails after 10 s, the
// watchdog of a test expecting the server to close the connection sooner.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	return conn
}

// requireClosedByServer reads conn to its end and requires that the server
// closed it (EOF or a reset), not the watchdog deadline.
func requireClosedByServer(t *testing.T, conn net.Conn) {
	t.Helper()
	_, err := io.Copy(io.Discard, conn)
	if err != nil {
		require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the server did not close the connection")
		require.ErrorIs(t, err, syscall.ECONNRESET)
	}
}

// A client that sends the headers and part of the body, then stops, is
// disconnected once the body read timeout passes; the handler's read fails
// with a deadline error.
func TestTricklingBodyIsCutOff(t *testing.T) {
	const bodyTimeout = 200 * time.Millisecond
	readErr := make(chan error, 1)
	addr := hygieneServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
		if err != nil {
			http.Error(w, "slow body", http.StatusBadRequest)
		}
	}), bodyTimeout, time.Minute)
	start := time.Now() // the server counts from the start of the request, which may be the connection's accept
	conn := dial(t, addr)
	_, err := fmt.Fprint(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":")
	require.NoError(t, err)
	requireClosedByServer(t, conn)
	assert.GreaterOrEqual(t, time.Since(start), bodyTimeout)
	err = <-readErr
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
}

// A body that arrives in time is read whole, and the connection is then
// kept alive for the next request (the deadline does not outlive the body).
func TestBodyInTimeKeepsConnection(t *testing.T) {
	addr := hygieneServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = w.Write(b)
	}), 100*time.Millisecond, time.Minute)
	conn := dial(t, addr)
	br := bufio.NewReader(conn)
	for i := range 2 {
		body := fmt.Sprintf("request %d", i)
		_, err := fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, body, string(got))
		if i == 0 {
			// Idle for longer than the body timeout: the next request
			// must still be served on this connection.
			<-time.After(300 * time.Millisecond)
		}
	}
}

// A keep-alive connection left idle is closed after the idle timeout.
func TestIdleConnectionIsClosed(t *testing.T) {
	const idle = 200 * time.Millisecond
	addr := hygieneServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}), 30*time.Second, idle)
	conn := dial(t, addr)
	_, err := fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	require.False(t, resp.Close, "kept alive")
	start := time.Now()
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "closed by the server, not the watchdog")
	assert.GreaterOrEqual(t, time.Since(start), idle-10*time.Millisecond)
}

// An SSE stream that stays open longer than the body read timeout keeps
// working: a GET stream (no body), and a POST answered with a stream once
// its body was read. The handler ends the stream when its request's
// context is cancelled, as the MCP endpoint does, so a read deadline left
// on the connection (which would make net/http's background read fail and
// cancel the request) would show as a stream ending before its second
// event.
func TestSSEOutlivesBodyReadTimeout(t *testing.T) {
	const bodyTimeout = 100 * time.Millisecond
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		t.Run(method, func(t *testing.T) {
			send := make(chan struct{})
			ctxErr := make(chan error, 1)
			addr := hygieneServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := io.ReadAll(r.Body); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "data: first\n\n")
				_ = http.NewResponseController(w).Flush()
				select {
				case <-send:
				case <-r.Context().Done():
				}
				ctxErr <- r.Context().Err()
				if r.Context().Err() != nil {
					return
				}
				_, _ = io.WriteString(w, "data: second\n\n")
				_ = http.NewResponseController(w).Flush()
			}), bodyTimeout, time.Minute)
			body := io.Reader(http.NoBody)
			if method == http.MethodPost {
				body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			}
			req, err := http.NewRequestWithContext(t.Context(), method, "http://"+addr+"/mcp", body)
			require.NoError(t, err)
			hc := &http.Client{Transport: &http.Transport{}}
			defer hc.CloseIdleConnections()
			resp, err := hc.Do(req)
			require.NoError(t, err)
			defer func() { _ = resp.Body.Close() }()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			events := bufio.NewScanner(resp.Body)
			require.True(t, events.Scan())
			require.Equal(t, "data: first", events.Text())

			<-time.After(3 * bodyTimeout) // only a wait for the deadline to pass
			close(send)
			require.NoError(t, <-ctxErr, "the request's context outlived the body read timeout")
			var lines []string
			for events.Scan() {
				if events.Text() != "" {
					lines = append(lines, events.Text())
				}
			}
			if err := events.Err(); err != nil && !errors.Is(err, io.EOF) {
				require.NoError(t, err)
			}
			assert.Equal(t, []string{"data: second"}, lines)
		})
	}
}
